// Original file: proto/svc/v1/svc_protocol.proto


/**
 * One finished execution (engine ExecutionEvent).
 */
export interface ExecutionEvent {
  'execution_id'?: (string);
  /**
   * full RUFID
   */
  'rufid'?: (string);
  'rufid_short'?: (string);
  'version'?: (string);
  'tenant_id'?: (string);
  'function_name'?: (string);
  /**
   * `success`, `error` or `timeout`
   */
  'status'?: (string);
  'execution_time_ms'?: (number | string);
  /**
   * svc error code of a failed run; unset on success
   */
  'error_code'?: (number);
  /**
   * ISO 8601 UTC time the execution finished
   */
  'timestamp'?: (string);
  /**
   * the full RUFID (the same as `rufid` in this message)
   */
  'full_rufid'?: (string);
  /**
   * SHA-256 hex of the receipt's signed bytes; empty when the execution has no receipt
   */
  'receipt_digest'?: (string);
  /**
   * true when the result came from the result cache
   */
  'cached'?: (boolean);
  '_error_code'?: "error_code";
}

/**
 * One finished execution (engine ExecutionEvent).
 */
export interface ExecutionEvent__Output {
  'execution_id': (string);
  /**
   * full RUFID
   */
  'rufid': (string);
  'rufid_short': (string);
  'version': (string);
  'tenant_id': (string);
  'function_name': (string);
  /**
   * `success`, `error` or `timeout`
   */
  'status': (string);
  'execution_time_ms': (number);
  /**
   * svc error code of a failed run; unset on success
   */
  'error_code'?: (number);
  /**
   * ISO 8601 UTC time the execution finished
   */
  'timestamp': (string);
  /**
   * the full RUFID (the same as `rufid` in this message)
   */
  'full_rufid': (string);
  /**
   * SHA-256 hex of the receipt's signed bytes; empty when the execution has no receipt
   */
  'receipt_digest': (string);
  /**
   * true when the result came from the result cache
   */
  'cached': (boolean);
  '_error_code'?: "error_code";
}
