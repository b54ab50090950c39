// Baseline ("peer") servers, each started as its own process on the server core:
//   node bench/peers.js <kind> '<options json>'   → prints `READY {"url"|"address": ...}`
// kinds:
//   koa       bare Koa returning options.json for every request (resolution baseline)
//   ivm-http  raw node:http calling `add` in a warm isolated-vm isolate (execution baseline)
//   grpc      bare @grpc/grpc-js serving svc.v1 ExecuteFunction with the same warm isolate
//   graphql   raw node:http + graphql-js execute() with an executeFunction resolver on the warm isolate
//   pyodide   raw node:http calling `add` in a warm Pyodide interpreter (Python execution baseline)
//   libp2p-echo  a plain js-libp2p node (TCP, Noise, Yamux: the daemon's stack, no membership) serving
//             options.protocol: reads one length-prefixed request, answers options.answer (a text,
//             sent as is) and closes the stream (the result protocol's request/response shape)
import http from 'node:http'

const [kind, raw] = process.argv.slice(2)
const options = raw ? JSON.parse(raw) : {}

const readBody = (req) => new Promise((resolve) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
})
const argsOf = (a) => (Array.isArray(a) ? a : [a.a, a.b])

async function warmIsolate() {
  const ivm = (await import('isolated-vm')).default
  const isolate = new ivm.Isolate({ memoryLimit: 64 })
  const context = await isolate.createContext()
  const script = await isolate.compileScript('function add(a, b) {\n  return a + b\n}\n; add')
  const fn = await script.run(context, { reference: true })
  return (args) => fn.apply(undefined, args, { arguments: { copy: true }, result: { copy: true }, timeout: 1000 })
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)))
}

const kinds = {
  async koa() {
    const Koa = (await import('koa')).default
    const { bodyParser } = await import('@koa/bodyparser')
    const app = new Koa()
    app.use(bodyParser())
    app.use((ctx) => {
      ctx.body = options.json ?? { ok: true }
    })
    const port = await listen(http.createServer(app.callback()))
    return { url: `http://127.0.0.1:${port}` }
  },
  async 'ivm-http'() {
    // options.cold: a new isolate (create, compile, call, dispose) per request
    const call = options.cold
      ? async (args) => {
        const ivm = (await import('isolated-vm')).default
        const isolate = new ivm.Isolate({ memoryLimit: 64 })
        try {
          const context = await isolate.createContext()
          const fn = await (await isolate.compileScript('function add(a, b) {\n  return a + b\n}\n; add')).run(context, { reference: true })
          return await fn.apply(undefined, args, { arguments: { copy: true }, result: { copy: true }, timeout: 1000 })
        } finally {
          isolate.dispose()
        }
      }
      : await warmIsolate()
    const server = http.createServer(async (req, res) => {
      const body = JSON.parse(await readBody(req))
      const result = await call(argsOf(body.arguments))
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ result, status: 'success' }))
    })
    server.keepAliveTimeout = 60_000
    const port = await listen(server)
    return { url: `http://127.0.0.1:${port}` }
  },
  async pyodide() {
    const { loadPyodide } = await import('pyodide')
    const py = await loadPyodide()
    py.runPython('def add(a, b):\n    return a + b\n')
    const add = py.globals.get('add')
    const server = http.createServer(async (req, res) => {
      const body = JSON.parse(await readBody(req))
      const result = add(...argsOf(body.arguments))
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ result, status: 'success' }))
    })
    server.keepAliveTimeout = 60_000
    const port = await listen(server)
    return { url: `http://127.0.0.1:${port}` }
  },
  async grpc() {
    const grpc = await import('@grpc/grpc-js')
    const protoLoader = await import('@grpc/proto-loader')
    const { PROTO_LOADER_OPTIONS, PROTO_ROOT, SVC_PROTO_FILE } = await import('../dist/api/grpc/proto.js')
    const proto = grpc.loadPackageDefinition(protoLoader.loadSync(SVC_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_ROOT] }))
    const call = await warmIsolate()
    const server = new grpc.Server()
    const unimplemented = (_c, cb) => cb({ code: grpc.status.UNIMPLEMENTED })
    const impl = new Proxy({
      ExecuteFunction(c, cb) {
        const t = performance.now()
        call(argsOf(JSON.parse(c.request.arguments_json || '[]'))).then(
          (result) => cb(null, { result_json: JSON.stringify(result), status: 'success', execution_time_ms: performance.now() - t }),
          (err) => cb({ code: grpc.status.INTERNAL, details: String(err) }))
      },
    }, { get: (t, k) => t[k] ?? unimplemented })
    server.addService(proto.svc.v1.SvcProtocolService.service, impl)
    const port = await new Promise((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))))
    return { address: `127.0.0.1:${port}` }
  },
  async graphql() {
    const { buildSchema, execute, parse, validate } = await import('graphql')
    const call = await warmIsolate()
    const schema = buildSchema(`
      scalar JSON
      type ExecutionResult { result: JSON, executionTimeMs: Float!, status: String! }
      type Query { ok: Boolean }
      type Mutation { executeFunction(rufid: String!, args: JSON!): ExecutionResult }
    `)
    const root = {
      async executeFunction({ args }) {
        const t = performance.now()
        const result = await call(argsOf(args))
        return { result, executionTimeMs: performance.now() - t, status: 'success' }
      },
    }
    const server = http.createServer(async (req, res) => {
      const { query, variables } = JSON.parse(await readBody(req))
      const document = parse(query)
      const errors = validate(schema, document)
      const out = errors.length ? { errors } : await execute({ schema, document, rootValue: root, variableValues: variables })
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(out))
    })
    server.keepAliveTimeout = 60_000
    const port = await listen(server)
    return { url: `http://127.0.0.1:${port}` }
  },
  async 'libp2p-echo'() {
    await import('../dist/polyfill.js') // Promise.withResolvers on Node 20, as the daemon loads it
    const { createLibp2p } = await import('libp2p')
    const { tcp } = await import('@libp2p/tcp')
    const { noise } = await import('@chainsafe/libp2p-noise')
    const { yamux } = await import('@libp2p/yamux')
    const { lpStream } = await import('@libp2p/utils')
    const answer = Buffer.from(options.answer ?? '{}', 'utf8')
    const node = await createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()] })
    await node.handle(options.protocol, async (stream) => {
      try {
        const lp = lpStream(stream, { maxDataLength: 32 * 1024 * 1024 })
        await lp.read()
        await lp.write(answer)
        await stream.close()
      } catch (err) {
        stream.abort(err)
      }
    })
    return { address: node.getMultiaddrs()[0].toString() }
  },
}

const ready = await kinds[kind]()
process.stdout.write(`READY ${JSON.stringify(ready)}\n`)
