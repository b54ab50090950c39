// Original file: proto/svc/v1/svc_protocol.proto


export interface ExecutionLimits {
  'timeout_ms'?: (number);
  'memory_mb'?: (number);
  'cpu_ms'?: (number);
  '_timeout_ms'?: "timeout_ms";
  '_memory_mb'?: "memory_mb";
  '_cpu_ms'?: "cpu_ms";
}

export interface ExecutionLimits__Output {
  'timeout_ms'?: (number);
  'memory_mb'?: (number);
  'cpu_ms'?: (number);
  '_timeout_ms'?: "timeout_ms";
  '_memory_mb'?: "memory_mb";
  '_cpu_ms'?: "cpu_ms";
}
