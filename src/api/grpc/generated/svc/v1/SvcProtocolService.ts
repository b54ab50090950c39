// Original file: proto/svc/v1/svc_protocol.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CreateRUFIDRequest as _svc_v1_CreateRUFIDRequest, CreateRUFIDRequest__Output as _svc_v1_CreateRUFIDRequest__Output } from '../../svc/v1/CreateRUFIDRequest.js';
import type { CreateRUFIDResponse as _svc_v1_CreateRUFIDResponse, CreateRUFIDResponse__Output as _svc_v1_CreateRUFIDResponse__Output } from '../../svc/v1/CreateRUFIDResponse.js';
import type { ExecuteFunctionRequest as _svc_v1_ExecuteFunctionRequest, ExecuteFunctionRequest__Output as _svc_v1_ExecuteFunctionRequest__Output } from '../../svc/v1/ExecuteFunctionRequest.js';
import type { ExecuteFunctionResponse as _svc_v1_ExecuteFunctionResponse, ExecuteFunctionResponse__Output as _svc_v1_ExecuteFunctionResponse__Output } from '../../svc/v1/ExecuteFunctionResponse.js';
import type { ExecutionEvent as _svc_v1_ExecutionEvent, ExecutionEvent__Output as _svc_v1_ExecutionEvent__Output } from '../../svc/v1/ExecutionEvent.js';
import type { ResolveRUFIDRequest as _svc_v1_ResolveRUFIDRequest, ResolveRUFIDRequest__Output as _svc_v1_ResolveRUFIDRequest__Output } from '../../svc/v1/ResolveRUFIDRequest.js';
import type { ResolveRUFIDResponse as _svc_v1_ResolveRUFIDResponse, ResolveRUFIDResponse__Output as _svc_v1_ResolveRUFIDResponse__Output } from '../../svc/v1/ResolveRUFIDResponse.js';
import type { StreamRequest as _svc_v1_StreamRequest, StreamRequest__Output as _svc_v1_StreamRequest__Output } from '../../svc/v1/StreamRequest.js';

export interface SvcProtocolServiceClient extends grpc.Client {
  /**
   * Publishes a function version (idempotent for identical content). REST: POST /api/v1/functions/create
   */
  CreateRUFID(argument: _svc_v1_CreateRUFIDRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  CreateRUFID(argument: _svc_v1_CreateRUFIDRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  CreateRUFID(argument: _svc_v1_CreateRUFIDRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  CreateRUFID(argument: _svc_v1_CreateRUFIDRequest, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Publishes a function version (idempotent for identical content). REST: POST /api/v1/functions/create
   */
  createRufid(argument: _svc_v1_CreateRUFIDRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  createRufid(argument: _svc_v1_CreateRUFIDRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  createRufid(argument: _svc_v1_CreateRUFIDRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  createRufid(argument: _svc_v1_CreateRUFIDRequest, callback: grpc.requestCallback<_svc_v1_CreateRUFIDResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Runs a function in the sandbox. REST: POST /api/v1/functions/{rufid}/execute
   */
  ExecuteFunction(argument: _svc_v1_ExecuteFunctionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  ExecuteFunction(argument: _svc_v1_ExecuteFunctionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  ExecuteFunction(argument: _svc_v1_ExecuteFunctionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  ExecuteFunction(argument: _svc_v1_ExecuteFunctionRequest, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Runs a function in the sandbox. REST: POST /api/v1/functions/{rufid}/execute
   */
  executeFunction(argument: _svc_v1_ExecuteFunctionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  executeFunction(argument: _svc_v1_ExecuteFunctionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  executeFunction(argument: _svc_v1_ExecuteFunctionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  executeFunction(argument: _svc_v1_ExecuteFunctionRequest, callback: grpc.requestCallback<_svc_v1_ExecuteFunctionResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Resolves a RUFID (short or full form) to its stored version. REST: POST /api/v1/functions/resolve
   */
  ResolveRUFID(argument: _svc_v1_ResolveRUFIDRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  ResolveRUFID(argument: _svc_v1_ResolveRUFIDRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  ResolveRUFID(argument: _svc_v1_ResolveRUFIDRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  ResolveRUFID(argument: _svc_v1_ResolveRUFIDRequest, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Resolves a RUFID (short or full form) to its stored version. REST: POST /api/v1/functions/resolve
   */
  resolveRufid(argument: _svc_v1_ResolveRUFIDRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  resolveRufid(argument: _svc_v1_ResolveRUFIDRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  resolveRufid(argument: _svc_v1_ResolveRUFIDRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  resolveRufid(argument: _svc_v1_ResolveRUFIDRequest, callback: grpc.requestCallback<_svc_v1_ResolveRUFIDResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Execution events of the caller's tenant as they finish, optionally for one RUFID only.
   */
  StreamExecutions(argument: _svc_v1_StreamRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_svc_v1_ExecutionEvent__Output>;
  StreamExecutions(argument: _svc_v1_StreamRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_svc_v1_ExecutionEvent__Output>;
  /**
   * Execution events of the caller's tenant as they finish, optionally for one RUFID only.
   */
  streamExecutions(argument: _svc_v1_StreamRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_svc_v1_ExecutionEvent__Output>;
  streamExecutions(argument: _svc_v1_StreamRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_svc_v1_ExecutionEvent__Output>;
  
}

export interface SvcProtocolServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Publishes a function version (idempotent for identical content). REST: POST /api/v1/functions/create
   */
  CreateRUFID: grpc.handleUnaryCall<_svc_v1_CreateRUFIDRequest__Output, _svc_v1_CreateRUFIDResponse>;
  
  /**
   * Runs a function in the sandbox. REST: POST /api/v1/functions/{rufid}/execute
   */
  ExecuteFunction: grpc.handleUnaryCall<_svc_v1_ExecuteFunctionRequest__Output, _svc_v1_ExecuteFunctionResponse>;
  
  /**
   * Resolves a RUFID (short or full form) to its stored version. REST: POST /api/v1/functions/resolve
   */
  ResolveRUFID: grpc.handleUnaryCall<_svc_v1_ResolveRUFIDRequest__Output, _svc_v1_ResolveRUFIDResponse>;
  
  /**
   * Execution events of the caller's tenant as they finish, optionally for one RUFID only.
   */
  StreamExecutions: grpc.handleServerStreamingCall<_svc_v1_StreamRequest__Output, _svc_v1_ExecutionEvent>;
  
}

export interface SvcProtocolServiceDefinition extends grpc.ServiceDefinition {
  CreateRUFID: MethodDefinition<_svc_v1_CreateRUFIDRequest, _svc_v1_CreateRUFIDResponse, _svc_v1_CreateRUFIDRequest__Output, _svc_v1_CreateRUFIDResponse__Output>
  ExecuteFunction: MethodDefinition<_svc_v1_ExecuteFunctionRequest, _svc_v1_ExecuteFunctionResponse, _svc_v1_ExecuteFunctionRequest__Output, _svc_v1_ExecuteFunctionResponse__Output>
  ResolveRUFID: MethodDefinition<_svc_v1_ResolveRUFIDRequest, _svc_v1_ResolveRUFIDResponse, _svc_v1_ResolveRUFIDRequest__Output, _svc_v1_ResolveRUFIDResponse__Output>
  StreamExecutions: MethodDefinition<_svc_v1_StreamRequest, _svc_v1_ExecutionEvent, _svc_v1_StreamRequest__Output, _svc_v1_ExecutionEvent__Output>
}
