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
   * false when identical content already existed (nothing was written)
   */
  'created'?: (boolean);
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
   * false when identical content already existed (nothing was written)
   */
  'created': (boolean);
}
