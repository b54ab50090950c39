// Original file: proto/svc/v1/svc_protocol.proto


export interface StreamRequest {
  /**
   * optional filter: short or full RUFID (a full one also pins the version); empty means all
   */
  'rufid'?: (string);
}

export interface StreamRequest__Output {
  /**
   * optional filter: short or full RUFID (a full one also pins the version); empty means all
   */
  'rufid': (string);
}
