// Original file: proto/svc/v1/svc_protocol.proto


export interface ExecuteFunctionRequest {
  /**
   * short (12 characters) or full RUFID
   */
  'rufid'?: (string);
  /**
   * `v<n>`; empty means the newest live version
   */
  'version'?: (string);
  /**
   * JSON text of an object of named arguments or of a positional array; empty means no arguments
   */
  'arguments_json'?: (string);
}

export interface ExecuteFunctionRequest__Output {
  /**
   * short (12 characters) or full RUFID
   */
  'rufid': (string);
  /**
   * `v<n>`; empty means the newest live version
   */
  'version': (string);
  /**
   * JSON text of an object of named arguments or of a positional array; empty means no arguments
   */
  'arguments_json': (string);
}
