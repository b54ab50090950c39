// Original file: proto/svc/v1/svc_protocol.proto


export interface ResolveRUFIDRequest {
  /**
   * short (12 characters) or full RUFID
   */
  'rufid'?: (string);
  /**
   * `v<n>`; empty means the newest live version of that hash
   */
  'version'?: (string);
}

export interface ResolveRUFIDRequest__Output {
  /**
   * short (12 characters) or full RUFID
   */
  'rufid': (string);
  /**
   * `v<n>`; empty means the newest live version of that hash
   */
  'version': (string);
}
