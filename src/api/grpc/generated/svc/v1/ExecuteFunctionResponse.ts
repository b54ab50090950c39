// Original file: proto/svc/v1/svc_protocol.proto


export interface ExecuteFunctionResponse {
  /**
   * the function's return value as JSON text (`null` when it returned nothing)
   */
  'result_json'?: (string);
  'execution_time_ms'?: (number | string);
  /**
   * `success` (failed runs answer with an error status instead)
   */
  'status'?: (string);
  'execution_id'?: (string);
  /**
   * the 12-character hash of the function that ran
   */
  'rufid_short'?: (string);
  /**
   * the full RUFID of the version that ran
   */
  'full_rufid'?: (string);
  /**
   * true when a deterministic function's result came from the result cache (nothing ran)
   */
  'cached'?: (boolean);
  /**
   * JSON text of the signed execution receipt (docs/receipts.md); empty when the node signs none.
   * A cached result carries the receipt of the execution that computed it.
   */
  'receipt_json'?: (string);
}

export interface ExecuteFunctionResponse__Output {
  /**
   * the function's return value as JSON text (`null` when it returned nothing)
   */
  'result_json': (string);
  'execution_time_ms': (number);
  /**
   * `success` (failed runs answer with an error status instead)
   */
  'status': (string);
  'execution_id': (string);
  /**
   * the 12-character hash of the function that ran
   */
  'rufid_short': (string);
  /**
   * the full RUFID of the version that ran
   */
  'full_rufid': (string);
  /**
   * true when a deterministic function's result came from the result cache (nothing ran)
   */
  'cached': (boolean);
  /**
   * JSON text of the signed execution receipt (docs/receipts.md); empty when the node signs none.
   * A cached result carries the receipt of the execution that computed it.
   */
  'receipt_json': (string);
}
