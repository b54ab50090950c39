// Original file: proto/svc/v1/svc_protocol.proto


export interface ResolveRUFIDResponse {
  'function_id'?: (string);
  /**
   * full RUFID
   */
  'rufid'?: (string);
  'version'?: (string);
  'accessible'?: (boolean);
  'cached'?: (boolean);
  'resolution_time_ms'?: (number | string);
  'content_digest'?: (string);
  'function_name'?: (string);
  'signature'?: (string);
  'language'?: (string);
  /**
   * JSON text; empty when the version has none
   */
  'manifest_json'?: (string);
  'lockfile_json'?: (string);
  'rufid_short'?: (string);
  /**
   * ISO 8601 UTC
   */
  'created_at'?: (string);
  /**
   * the full RUFID (the same as `rufid` in this message)
   */
  'full_rufid'?: (string);
}

export interface ResolveRUFIDResponse__Output {
  'function_id': (string);
  /**
   * full RUFID
   */
  'rufid': (string);
  'version': (string);
  'accessible': (boolean);
  'cached': (boolean);
  'resolution_time_ms': (number);
  'content_digest': (string);
  'function_name': (string);
  'signature': (string);
  'language': (string);
  /**
   * JSON text; empty when the version has none
   */
  'manifest_json': (string);
  'lockfile_json': (string);
  'rufid_short': (string);
  /**
   * ISO 8601 UTC
   */
  'created_at': (string);
  /**
   * the full RUFID (the same as `rufid` in this message)
   */
  'full_rufid': (string);
}
