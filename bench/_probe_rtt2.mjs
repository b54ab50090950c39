import '../dist/polyfill.js'
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@libp2p/yamux'
import { lpStream } from '@libp2p/utils'
const mk = () => createLibp2p({ addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] }, transports: [tcp()], connectionEncrypters: [noise()], streamMuxers: [yamux()] })
const s = await mk(); const c = await mk()
const answer = Buffer.alloc(2249, 97)
await s.handle('/p/1', async (stream) => { const lp = lpStream(stream); await lp.read(); await lp.write(answer); await stream.close() })
const target = s.getMultiaddrs()[0]
await c.dial(target)
for (let i = 0; i < 50; i++) { const st = await c.dialProtocol(target, '/p/1'); const lp = lpStream(st); await lp.write(Buffer.alloc(286, 1)); await lp.read(); await st.close() }
const cpu0 = process.cpuUsage(); const w0 = performance.now()
const N = 300
for (let i = 0; i < N; i++) { const st = await c.dialProtocol(target, '/p/1'); const lp = lpStream(st); await lp.write(Buffer.alloc(286, 1)); await lp.read(); await st.close() }
const cpu = process.cpuUsage(cpu0); const wall = performance.now() - w0
console.log({ wall_per_req_ms: (wall / N).toFixed(3), cpu_per_req_ms: ((cpu.user + cpu.system) / 1000 / N).toFixed(3) })
await c.stop(); await s.stop()
