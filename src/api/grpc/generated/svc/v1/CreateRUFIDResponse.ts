// Original file: proto/svc/v1/svc_protocol.proto


export interface CreateRUFIDResponse {
  /**
   * full RUFID, `rufid:<hash>:v<n>:<tenant>`
   */
  'rufid'?: (string);
  'import_statement'?: (string);
  'share_url'?: (string);
  /**
   * the 12-character hash
   */
  'rufid_short'?: (string);
  /**
   * `v<n>`
   */
  'version'?: (string);
  /**
   * SHA-256 hex of the canonical content
   */
  'content_digest'?: (string);
  /**
   * `/api/v1/functions/<rufid_short>/execute`
   */
  'api_endpoint'?: (string);
  /**
   * false when identical content already existed (nothing was written). Explicit presence
   * (proto3 `optional`): the node always sets it, so `false` is on the wire and a client can tell
   * it from an older node that did not send it (wire-compatible with the former `bool created = 8`).
   */
  'created'?: (boolean);
  /**
   * the full RUFID (the same as `rufid` in this message)
   */
  'full_rufid'?: (string);
  '_created'?: "created";
}

export interface CreateRUFIDResponse__Output {
  /**
   * full RUFID, `rufid:<hash>:v<n>:<tenant>`
   */
  'rufid': (string);
  'import_statement': (string);
  'share_url': (string);
  /**
   * the 12-character hash
   */
  'rufid_short': (string);
  /**
   * `v<n>`
   */
  'version': (string);
  /**
   * SHA-256 hex of the canonical content
   */
  'content_digest': (string);
  /**
   * `/api/v1/functions/<rufid_short>/execute`
   */
  'api_endpoint': (string);
  /**
   * false when identical content already existed (nothing was written). Explicit presence
   * (proto3 `optional`): the node always sets it, so `false` is on the wire and a client can tell
   * it from an older node that did not send it (wire-compatible with the former `bool created = 8`).
   */
  'created'?: (boolean);
  /**
   * the full RUFID (the same as `rufid` in this message)
   */
  'full_rufid': (string);
  '_created'?: "created";
}
