import type { PackageDefinition } from '@grpc/proto-loader'
import descriptor from 'protobufjs/ext/descriptor/index.js'

// protobufjs is CommonJS with exports Node cannot detect statically: take them from the default export
const { FileDescriptorProto } = descriptor

interface FieldShape {
  name?: string
  typeName?: string
}
interface MessageShape {
  name?: string
  field?: FieldShape[]
  nestedType?: MessageShape[]
  options?: { mapEntry?: boolean } | null
}
interface FileShape {
  messageType?: MessageShape[]
}

/**
 * The package definition for @grpc/reflection with map fields described as protoc does.
 *
 * protobufjs (through proto-loader) names the implicit entry message of `map<…> statuses` after
 * the field ("Statuses") instead of protoc's "StatusesEntry", and Go clients (grpcurl, grpcui)
 * refuse the whole file: "is an invalid map: incorrect implicit map entry name"
 * (fullstorydev/grpcurl#519). The standard health proto has such a map (HealthListResponse), so
 * without this, reflection-based calls to grpc.health.v1.Health fail.
 */
export function reflectionDefinitionOf(packageDefinition: PackageDefinition): PackageDefinition {
  const fixed = new Map<Buffer, Buffer>()
  const fix = (bin: Buffer): Buffer => {
    let out = fixed.get(bin)
    if (out === undefined) {
      const file = FileDescriptorProto.decode(bin) as unknown as FileShape
      let changed = false
      for (const message of file.messageType ?? []) changed = renameMapEntries(message) || changed
      out = changed ? Buffer.from(FileDescriptorProto.encode(file as never).finish()) : bin
      fixed.set(bin, out)
    }
    return out
  }
  const result: PackageDefinition = {}
  for (const [name, definition] of Object.entries(packageDefinition)) {
    const protos = (definition as { fileDescriptorProtos?: unknown }).fileDescriptorProtos
    result[name] = Array.isArray(protos)
      ? ({ ...definition, fileDescriptorProtos: (protos as Buffer[]).map(fix) } as typeof definition)
      : definition
  }
  return result
}

/** protoc's entry name: the field name in CamelCase plus `Entry` (`foo_bar` → `FooBarEntry`). */
const entryNameOf = (fieldName: string): string =>
  `${fieldName.replace(/(?<!_)_+([a-zA-Z0-9])/g, (_m, c: string) => c.toUpperCase()).replace(/^[a-z]/, (c) => c.toUpperCase())}Entry`

function renameMapEntries(message: MessageShape): boolean {
  let changed = false
  for (const nested of message.nestedType ?? []) {
    changed = renameMapEntries(nested) || changed
    if (!nested.options?.mapEntry || nested.name === undefined) continue
    const field = (message.field ?? []).find((f) => f.typeName === nested.name)
    if (field?.name === undefined) continue
    const expected = entryNameOf(field.name)
    if (nested.name === expected) continue
    nested.name = expected
    field.typeName = expected
    changed = true
  }
  return changed
}
