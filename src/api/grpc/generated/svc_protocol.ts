import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { CreateRUFIDRequest as _svc_v1_CreateRUFIDRequest, CreateRUFIDRequest__Output as _svc_v1_CreateRUFIDRequest__Output } from './svc/v1/CreateRUFIDRequest.js';
import type { CreateRUFIDResponse as _svc_v1_CreateRUFIDResponse, CreateRUFIDResponse__Output as _svc_v1_CreateRUFIDResponse__Output } from './svc/v1/CreateRUFIDResponse.js';
import type { ExecuteFunctionRequest as _svc_v1_ExecuteFunctionRequest, ExecuteFunctionRequest__Output as _svc_v1_ExecuteFunctionRequest__Output } from './svc/v1/ExecuteFunctionRequest.js';
import type { ExecuteFunctionResponse as _svc_v1_ExecuteFunctionResponse, ExecuteFunctionResponse__Output as _svc_v1_ExecuteFunctionResponse__Output } from './svc/v1/ExecuteFunctionResponse.js';
import type { ExecutionEvent as _svc_v1_ExecutionEvent, ExecutionEvent__Output as _svc_v1_ExecutionEvent__Output } from './svc/v1/ExecutionEvent.js';
import type { ExecutionLimits as _svc_v1_ExecutionLimits, ExecutionLimits__Output as _svc_v1_ExecutionLimits__Output } from './svc/v1/ExecutionLimits.js';
import type { ResolveRUFIDRequest as _svc_v1_ResolveRUFIDRequest, ResolveRUFIDRequest__Output as _svc_v1_ResolveRUFIDRequest__Output } from './svc/v1/ResolveRUFIDRequest.js';
import type { ResolveRUFIDResponse as _svc_v1_ResolveRUFIDResponse, ResolveRUFIDResponse__Output as _svc_v1_ResolveRUFIDResponse__Output } from './svc/v1/ResolveRUFIDResponse.js';
import type { StreamRequest as _svc_v1_StreamRequest, StreamRequest__Output as _svc_v1_StreamRequest__Output } from './svc/v1/StreamRequest.js';
import type { SvcProtocolServiceClient as _svc_v1_SvcProtocolServiceClient, SvcProtocolServiceDefinition as _svc_v1_SvcProtocolServiceDefinition } from './svc/v1/SvcProtocolService.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  svc: {
    v1: {
      CreateRUFIDRequest: MessageTypeDefinition<_svc_v1_CreateRUFIDRequest, _svc_v1_CreateRUFIDRequest__Output>
      CreateRUFIDResponse: MessageTypeDefinition<_svc_v1_CreateRUFIDResponse, _svc_v1_CreateRUFIDResponse__Output>
      ExecuteFunctionRequest: MessageTypeDefinition<_svc_v1_ExecuteFunctionRequest, _svc_v1_ExecuteFunctionRequest__Output>
      ExecuteFunctionResponse: MessageTypeDefinition<_svc_v1_ExecuteFunctionResponse, _svc_v1_ExecuteFunctionResponse__Output>
      ExecutionEvent: MessageTypeDefinition<_svc_v1_ExecutionEvent, _svc_v1_ExecutionEvent__Output>
      ExecutionLimits: MessageTypeDefinition<_svc_v1_ExecutionLimits, _svc_v1_ExecutionLimits__Output>
      ResolveRUFIDRequest: MessageTypeDefinition<_svc_v1_ResolveRUFIDRequest, _svc_v1_ResolveRUFIDRequest__Output>
      ResolveRUFIDResponse: MessageTypeDefinition<_svc_v1_ResolveRUFIDResponse, _svc_v1_ResolveRUFIDResponse__Output>
      StreamRequest: MessageTypeDefinition<_svc_v1_StreamRequest, _svc_v1_StreamRequest__Output>
      SvcProtocolService: SubtypeConstructor<typeof grpc.Client, _svc_v1_SvcProtocolServiceClient> & { service: _svc_v1_SvcProtocolServiceDefinition }
    }
  }
}

