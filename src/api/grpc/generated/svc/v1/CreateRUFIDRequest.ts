// Original file: proto/svc/v1/svc_protocol.proto

import type { ExecutionLimits as _svc_v1_ExecutionLimits, ExecutionLimits__Output as _svc_v1_ExecutionLimits__Output } from '../../svc/v1/ExecutionLimits.js';

export interface CreateRUFIDRequest {
  'function_name'?: (string);
  'source_code'?: (string);
  'signature'?: (string);
  'language'?: (string);
  'tags'?: (string)[];
  /**
   * optional; empty means none
   */
  'description'?: (string);
  /**
   * function.svc.json (service-spec §2.4) as JSON text; empty means none
   */
  'manifest_json'?: (string);
  /**
   * function.lock.json (service-spec §2.5) as JSON text; empty means computed from the manifest
   */
  'lockfile_json'?: (string);
  /**
   * per-function limits, capped by the node's maximums; unset means the node's defaults
   */
  'limits'?: (_svc_v1_ExecutionLimits | null);
}

export interface CreateRUFIDRequest__Output {
  'function_name': (string);
  'source_code': (string);
  'signature': (string);
  'language': (string);
  'tags': (string)[];
  /**
   * optional; empty means none
   */
  'description': (string);
  /**
   * function.svc.json (service-spec §2.4) as JSON text; empty means none
   */
  'manifest_json': (string);
  /**
   * function.lock.json (service-spec §2.5) as JSON text; empty means computed from the manifest
   */
  'lockfile_json': (string);
  /**
   * per-function limits, capped by the node's maximums; unset means the node's defaults
   */
  'limits': (_svc_v1_ExecutionLimits__Output | null);
}
