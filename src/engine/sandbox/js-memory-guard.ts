/**
 * Memory a JavaScript function can make outside the V8 heap, counted against its `memory_mb`.
 *
 * isolated-vm's `memoryLimit` counts the V8 heap and the ArrayBuffers V8 allocates through the
 * isolate's allocator (plain and shared ones: past the limit they fail with "Array buffer
 * allocation failed"). It does not see what V8 reserves and commits itself, nor what ICU allocates:
 * WebAssembly memories (`WebAssembly.Memory`, a module's own memory, `memory.grow` from inside
 * Wasm), resizable ArrayBuffers and growable SharedArrayBuffers (`maxByteLength`), compiled Wasm
 * code, and the ICU objects behind `Intl` (a `DateTimeFormat` holds about 25 KB outside the heap).
 * Measured on main: four calls growing one Wasm memory each to 512 MiB at memory_mb 64 all
 * succeeded; 100,000 `Intl.DateTimeFormat`s held 1.3 GB at a 22 MB heap.
 *
 * MEMORY_GUARD runs in every context before the function's source (inside the prelude's closure,
 * `$1` = the isolate's memory limit in MB) and wraps what makes such memory, so that it is
 * **charged** to the isolate's own limit: each object made gets a charge, an ArrayBuffer of the
 * bytes it can hold, allocated through the isolate's allocator (so isolated-vm counts it in
 * `externally_allocated_size` and against `memoryLimit`) and kept alive by the object (a WeakMap
 * entry: the charge is released when the object is collected). A charge that does not fit is
 * refused: the constructor throws a RangeError `memory limit: …` and nothing is made. Charges are
 * never written to, so they cost address space but no resident memory (the worker's malloc maps
 * blocks of 128 KiB and more, untouched; smaller charges share 1 MiB blocks).
 *
 * - A WebAssembly memory may hold at most MEMORY_SHARE (¾) of the limit, so that the heap keeps
 *   room: its maximum is lowered to that (a memory declaring none gets it), a memory whose initial
 *   size is above it is refused, and it is charged at its maximum when made, so `memory.grow` from
 *   inside Wasm cannot pass the charge. A module's own memories are bounded by rewriting the
 *   limits of its memory section before V8 compiles it; an instance is charged for them.
 * - A resizable ArrayBuffer or growable SharedArrayBuffer is charged at its `maxByteLength`.
 * - A compiled module is charged at WASM_CODE_FACTOR times its size (wire bytes and machine code).
 * - `Intl` objects are charged an estimate each (INTL_CHARGES, measured on V8 11.3 / ICU 73).
 *
 * `WebAssembly.compile` and `instantiate` compile at once instead of on V8's background threads:
 * isolated-vm does not wake an isolate for the task that resolves them, so their promises settled
 * only if something else entered the isolate (a call could hang until its time limit).
 *
 * What stays outside: garbage ICU objects V8 makes for `toLocaleString` and friends until a GC,
 * transient compiler memory, V8's own bookkeeping. The worker's total memory bound and its cgroup
 * (memory-bound.ts, cgroups.ts) catch what this misses.
 */

/** The share of memory_mb one WebAssembly memory may hold. */
export const MEMORY_SHARE = 0.75
/** A compiled Wasm module is charged this many times its size. */
export const WASM_CODE_FACTOR = 4
/** The error message every refusal starts with (js-call.ts reports it as the memory limit's error). */
export const MEMORY_REFUSAL_PREFIX = 'memory limit: '

/**
 * Bytes each Intl object is charged (measured RSS per object, rounded up: DateTimeFormat 21-26 KB
 * with options, a used Segmenter 5.7 KB, Collator 1.4 KB, the rest under 300 B).
 */
export const INTL_CHARGES: Readonly<Record<string, number>> = {
  DateTimeFormat: 32 * 1024,
  Segmenter: 8 * 1024,
  v8BreakIterator: 8 * 1024,
  Collator: 2 * 1024,
  NumberFormat: 1024,
  PluralRules: 1024,
  RelativeTimeFormat: 1024,
  ListFormat: 1024,
  DisplayNames: 1024,
  Locale: 1024,
}

export const MEMORY_GUARD = String.raw`
const memoryGuard = (() => {
  const memoryMb = $1;
  const MIB = 1048576;
  const PAGE = 65536;
  const LARGE = 131072;
  const BUCKET = MIB;
  const capPages = Math.floor((memoryMb * MIB * ${MEMORY_SHARE}) / PAGE);
  const prefix = ${JSON.stringify(MEMORY_REFUSAL_PREFIX)};
  const intlCharges = ${JSON.stringify(INTL_CHARGES)};
  const codeFactor = ${WASM_CODE_FACTOR};

  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ownKeys = Reflect.ownKeys;
  const floor = Math.floor;
  const min = Math.min;
  const RangeErrorCtor = RangeError;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const ArrayBufferCtor = ArrayBuffer;
  const SharedArrayBufferCtor = SharedArrayBuffer;
  const Uint8ArrayCtor = Uint8Array;
  const WeakMapCtor = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const u8Set = Uint8Array.prototype.set;
  const isView = ArrayBuffer.isView;
  const getter = (proto, name) => getOwnPropertyDescriptor(proto, name).get;
  const TypedArrayProto = Object.getPrototypeOf(Uint8Array.prototype);
  const taBuffer = getter(TypedArrayProto, 'buffer');
  const taOffset = getter(TypedArrayProto, 'byteOffset');
  const taLength = getter(TypedArrayProto, 'byteLength');
  const dvBuffer = getter(DataView.prototype, 'buffer');
  const dvOffset = getter(DataView.prototype, 'byteOffset');
  const dvLength = getter(DataView.prototype, 'byteLength');
  const abLength = getter(ArrayBuffer.prototype, 'byteLength');
  const sabLength = getter(SharedArrayBuffer.prototype, 'byteLength');
  const Wasm = WebAssembly;
  const MemoryCtor = Wasm.Memory;
  const ModuleCtor = Wasm.Module;
  const InstanceCtor = Wasm.Instance;
  const CompileErrorCtor = Wasm.CompileError;
  const moduleExports = ModuleCtor.exports;
  const memoryBuffer = getter(MemoryCtor.prototype, 'buffer');
  const instanceExports = getter(InstanceCtor.prototype, 'exports');

  /** object → the charges it keeps alive */
  const charges = new WeakMapCtor();
  /** compiled module → bytes its own memories can hold at most */
  const moduleMemory = new WeakMapCtor();
  let bucket;
  let bucketUsed = 0;

  function refuse(what) {
    throw new RangeErrorCtor(prefix + what + ' exceeds the memory limit of ' + memoryMb + ' MB');
  }

  /** an ArrayBuffer of 'bytes', counted by the isolate's limit; refused (RangeError) when it does not fit */
  function take(bytes, what) {
    try {
      return new ArrayBufferCtor(bytes);
    } catch (err) {
      return refuse(what);
    }
  }

  /** a charge of 'bytes' (undefined for none) */
  function charge(bytes, what) {
    if (!(bytes > 0)) return undefined;
    if (bytes >= LARGE) return take(bytes, what);
    if (bucket === undefined || bucketUsed + bytes > BUCKET) {
      bucket = take(BUCKET, what);
      bucketUsed = 0;
    }
    bucketUsed += bytes;
    return bucket;
  }

  /** 'holder' keeps 'token' (a charge) alive */
  function hold(holder, token) {
    if (token === undefined) return;
    const held = apply(weakGet, charges, [holder]);
    if (held === undefined) apply(weakSet, charges, [holder, [token]]);
    else held[held.length] = token;
  }

  /** 'wrapper' stands in for 'original' everywhere user code can reach it */
  function replace(owner, name, original, wrapper) {
    for (const key of ownKeys(original)) {
      if (key === 'prototype' || key === 'length' || key === 'name') continue;
      defineProperty(wrapper, key, getOwnPropertyDescriptor(original, key));
    }
    defineProperty(wrapper, 'name', { value: name, configurable: true });
    defineProperty(wrapper, 'length', { value: original.length, configurable: true });
    defineProperty(wrapper, 'prototype', { value: original.prototype, writable: false, enumerable: false, configurable: false });
    defineProperty(original.prototype, 'constructor', { value: wrapper, writable: true, enumerable: false, configurable: true });
    defineProperty(owner, name, { value: wrapper, writable: true, enumerable: false, configurable: true });
  }

  const requireNew = (name) => {
    throw new TypeErrorCtor("Constructor " + name + " requires 'new'");
  };

  // ---- resizable ArrayBuffers and growable SharedArrayBuffers: charged at maxByteLength ----
  function bounded(Original, name) {
    const wrapper = function (length, options) {
      if (new.target === undefined) requireNew(name);
      const target = new.target === wrapper ? Original : new.target;
      if (options === null || (typeof options !== 'object' && typeof options !== 'function')) return construct(Original, [length], target);
      const max = options.maxByteLength;
      if (max === undefined) return construct(Original, [length], target);
      const maxBytes = +max;
      const token = charge(maxBytes, (name === 'ArrayBuffer' ? 'a resizable ArrayBuffer' : 'a growable SharedArrayBuffer') + ' of up to ' + maxBytes + ' bytes');
      const buffer = construct(Original, [length, { maxByteLength: maxBytes }], target);
      hold(buffer, token);
      return buffer;
    };
    replace(globalThis, name, Original, wrapper);
  }
  bounded(ArrayBufferCtor, 'ArrayBuffer');
  bounded(SharedArrayBufferCtor, 'SharedArrayBuffer');

  // ---- WebAssembly ----
  const Memory = function Memory(descriptor) {
    if (new.target === undefined) requireNew('WebAssembly.Memory');
    const target = new.target === Memory ? MemoryCtor : new.target;
    if (descriptor === null || typeof descriptor !== 'object') return construct(MemoryCtor, [descriptor], target);
    // each property read once: a getter cannot answer the check one thing and V8 another
    const initial = +descriptor.initial;
    const maximum = descriptor.maximum;
    const shared = descriptor.shared;
    if (initial > capPages) refuse('a WebAssembly memory of ' + initial + ' pages (' + initial * PAGE + ' bytes)');
    const pages = maximum === undefined ? capPages : min(+maximum, capPages);
    const token = charge(pages * PAGE, 'a WebAssembly memory of up to ' + pages + ' pages');
    const memory = construct(MemoryCtor, [{ initial, maximum: pages, shared }], target);
    hold(memory, token);
    return memory;
  };
  replace(Wasm, 'Memory', MemoryCtor, Memory);

  /** a copy of a BufferSource's bytes */
  function bytesOf(source) {
    let buffer;
    let offset = 0;
    let length;
    if (isView(source)) {
      try {
        buffer = apply(taBuffer, source, []);
        offset = apply(taOffset, source, []);
        length = apply(taLength, source, []);
      } catch (err) {
        buffer = apply(dvBuffer, source, []);
        offset = apply(dvOffset, source, []);
        length = apply(dvLength, source, []);
      }
    } else {
      buffer = source;
      try {
        length = apply(abLength, source, []);
      } catch (err) {
        try {
          length = apply(sabLength, source, []);
        } catch (err2) {
          throw new TypeErrorCtor('WebAssembly.Module(): Argument 0 must be a buffer source');
        }
      }
    }
    const copy = new Uint8ArrayCtor(length);
    apply(u8Set, copy, [new Uint8ArrayCtor(buffer, offset, length)]);
    return copy;
  }

  function leb(value, out) {
    do {
      let byte = value % 128;
      value = floor(value / 128);
      if (value > 0) byte += 128;
      out[out.length] = byte;
    } while (value > 0);
  }

  /**
   * The module's bytes with each memory it defines bounded to capPages (the maximum lowered, or
   * set when absent), and the bytes those memories can hold at most. A memory whose initial size is
   * above capPages is refused. Only the memory section is changed; V8 validates the rest.
   */
  function limitWasm(bytes) {
    const n = bytes.length;
    // not a version-1 module: V8 refuses it
    if (n < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d ||
      bytes[4] !== 1 || bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) return { bytes, memoryBytes: 0 };
    let p = 8;
    const u32 = () => {
      let value = 0;
      let scale = 1;
      for (let i = 0; i < 5; i++) {
        if (p >= n) throw new CompileErrorCtor('WebAssembly.Module(): unexpected end of the module');
        const byte = bytes[p++];
        value += (byte % 128) * scale;
        if (byte < 128) {
          if (value > 0xffffffff) break;
          return value;
        }
        scale *= 128;
      }
      throw new CompileErrorCtor('WebAssembly.Module(): invalid LEB128 number');
    };
    /** the new module: ranges of the original [from, to] and rewritten sections (byte arrays) */
    const parts = [];
    let copiedTo = 0;
    let memoryBytes = 0;
    while (p < n) {
      const start = p;
      const id = bytes[p++];
      const size = u32();
      const end = p + size;
      if (end > n) throw new CompileErrorCtor('WebAssembly.Module(): a section runs past the end of the module');
      if (id === 5) {
        const body = [];
        const count = u32();
        leb(count, body);
        for (let i = 0; i < count; i++) {
          if (p >= end) throw new CompileErrorCtor('WebAssembly.Module(): the memory section is truncated');
          const flags = bytes[p++];
          // 2: shared without a maximum (invalid); above 3: 64-bit memories (not enabled)
          if (flags === 2 || flags > 3) throw new CompileErrorCtor('WebAssembly.Module(): unsupported memory limits (flags ' + flags + ')');
          const initial = u32();
          const maximum = (flags & 1) === 1 ? u32() : undefined;
          if (initial > capPages) refuse('a WebAssembly memory of ' + initial + ' pages (' + initial * PAGE + ' bytes)');
          const pages = maximum === undefined ? capPages : min(maximum, capPages);
          memoryBytes += pages * PAGE;
          body[body.length] = flags | 1;
          leb(initial, body);
          leb(pages, body);
        }
        if (p !== end) throw new CompileErrorCtor('WebAssembly.Module(): the memory section has trailing bytes');
        const section = [5];
        leb(body.length, section);
        for (let i = 0; i < body.length; i++) section[section.length] = body[i];
        parts[parts.length] = [copiedTo, start];
        parts[parts.length] = section;
        copiedTo = end;
      }
      p = end;
    }
    if (parts.length === 0) return { bytes, memoryBytes };
    parts[parts.length] = [copiedTo, n];
    let total = 0;
    for (let i = 0; i < parts.length; i++) total += i % 2 === 0 ? parts[i][1] - parts[i][0] : parts[i].length;
    const result = new Uint8ArrayCtor(total);
    let at = 0;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (i % 2 === 0) {
        for (let j = part[0]; j < part[1]; j++) result[at++] = bytes[j];
      } else {
        for (let j = 0; j < part.length; j++) result[at++] = part[j];
      }
    }
    return { bytes: result, memoryBytes };
  }

  const Module = function Module(source) {
    if (new.target === undefined) requireNew('WebAssembly.Module');
    const target = new.target === Module ? ModuleCtor : new.target;
    const limited = limitWasm(bytesOf(source));
    const token = charge(limited.bytes.length * codeFactor, 'a WebAssembly module of ' + limited.bytes.length + ' bytes');
    const module = construct(ModuleCtor, [limited.bytes], target);
    hold(module, token);
    apply(weakSet, moduleMemory, [module, limited.memoryBytes]);
    return module;
  };
  replace(Wasm, 'Module', ModuleCtor, Module);

  const Instance = function Instance(module, importObject) {
    if (new.target === undefined) requireNew('WebAssembly.Instance');
    const target = new.target === Instance ? InstanceCtor : new.target;
    const memoryBytes = apply(weakGet, moduleMemory, [module]);
    if (memoryBytes === undefined) throw new TypeErrorCtor('WebAssembly.Instance(): Argument 0 must be a WebAssembly.Module');
    const token = charge(memoryBytes, 'WebAssembly memories of up to ' + memoryBytes + ' bytes');
    const instance = construct(InstanceCtor, [module, importObject], target);
    hold(instance, token);
    // an exported memory may outlive its instance: it keeps the charge too
    const exported = apply(instanceExports, instance, []);
    const names = ownKeys(exported);
    for (let i = 0; i < names.length; i++) {
      const value = exported[names[i]];
      try {
        apply(memoryBuffer, value, []);
      } catch (err) {
        continue;
      }
      hold(value, token);
    }
    return instance;
  };
  replace(Wasm, 'Instance', InstanceCtor, Instance);

  const isModule = (value) => {
    try {
      moduleExports(value);
      return true;
    } catch (err) {
      return false;
    }
  };
  defineProperty(Wasm, 'compile', {
    value: function compile(source) {
      return new PromiseCtor((resolve) => resolve(new Module(source)));
    },
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(Wasm, 'instantiate', {
    value: function instantiate(source, importObject) {
      return new PromiseCtor((resolve) => {
        if (isModule(source)) {
          resolve(new Instance(source, importObject));
          return;
        }
        const module = new Module(source);
        resolve({ module, instance: new Instance(module, importObject) });
      });
    },
    writable: true, enumerable: false, configurable: true,
  });

  // ---- Intl: ICU objects, outside the heap ----
  for (const name of ownKeys(intlCharges)) {
    const Original = Intl[name];
    if (typeof Original !== 'function') continue;
    const bytes = intlCharges[name];
    const wrapper = function (...args) {
      // Collator, DateTimeFormat and NumberFormat may be called without new: each call makes one
      const target = new.target === undefined || new.target === wrapper ? Original : new.target;
      const token = charge(bytes, 'Intl.' + name);
      const made = construct(Original, args, target);
      hold(made, token);
      return made;
    };
    replace(Intl, name, Original, wrapper);
  }

  return { capPages };
})();
`
