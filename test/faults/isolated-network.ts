// Real network partitions for federation daemons on one machine: each node runs in its own network
// namespace (iproute2, root) with two links. A management link, a /30 of its own to the root
// namespace, carries the test's REST calls and nothing else (the root namespace does not forward, so
// nodes cannot reach each other over it). A data link joins a bridge that carries libp2p. A
// partition moves some nodes' data links to a second bridge: no frame crosses between the two, while
// every node stays reachable from the test. Names carry a random suffix, so parallel runs (and other
// engineers' tests) never meet; `destroy()` removes everything.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'

export interface IsolatedNode {
  index: number
  netns: string
  /** the node's address on its management link (its REST door listens here) */
  mgmtIp: string
  /** the node's address on the data bridge (libp2p listens here) */
  dataIp: string
  /** the root-side end of its data link (moved between bridges to partition) */
  dataLink: string
}

const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

/** Whether this process may create network namespaces (root with CAP_NET_ADMIN). */
export function canIsolate(): boolean {
  const probe = `rltp${randomBytes(3).toString('hex')}`
  try {
    ip('netns', 'add', probe)
    ip('netns', 'del', probe)
    return true
  } catch {
    return false
  }
}

export class IsolatedNetwork {
  readonly nodes: IsolatedNode[] = []
  private readonly bridges: [string, string]
  private readonly partitioned = new Set<number>()

  private constructor(private readonly sfx: string) {
    this.bridges = [`rlt${sfx}a`, `rlt${sfx}b`]
  }

  /** `n` namespaces, each with its management link and its data link on bridge A. */
  static create(n: number): IsolatedNetwork {
    const net = new IsolatedNetwork(randomBytes(3).toString('hex'))
    try {
      net.build(n)
    } catch (err) {
      net.destroy()
      throw err
    }
    return net
  }

  private build(n: number): void {
    const used = ip('-4', '-o', 'addr', 'show')
    let a = 0
    let b = 0
    for (let tries = 0; ; tries++) {
      a = 200 + Math.floor(Math.random() * 50)
      b = Math.floor(Math.random() * 250)
      if (!used.includes(`10.${a}.${b}.`) && !used.includes(`10.${a}.${b + 1}.`)) break
      if (tries > 50) throw new Error('no free 10.x.y.0/23 for the isolated network')
    }
    for (const bridge of this.bridges) {
      ip('link', 'add', bridge, 'type', 'bridge')
      ip('link', 'set', bridge, 'up')
    }
    for (let i = 1; i <= n; i++) {
      const netns = `rlt${this.sfx}n${i}`
      ip('netns', 'add', netns)
      const inNs = (...args: string[]) => ip('netns', 'exec', netns, 'ip', ...args)
      inNs('link', 'set', 'lo', 'up')
      // management: a /30 to the root namespace
      const mgmtRoot = `10.${a}.${b}.${4 * i + 1}`
      const mgmtIp = `10.${a}.${b}.${4 * i + 2}`
      ip('link', 'add', `rlt${this.sfx}m${i}`, 'type', 'veth', 'peer', 'name', `rlt${this.sfx}M${i}`)
      ip('addr', 'add', `${mgmtRoot}/30`, 'dev', `rlt${this.sfx}m${i}`)
      ip('link', 'set', `rlt${this.sfx}m${i}`, 'up')
      ip('link', 'set', `rlt${this.sfx}M${i}`, 'netns', netns)
      inNs('addr', 'add', `${mgmtIp}/30`, 'dev', `rlt${this.sfx}M${i}`)
      inNs('link', 'set', `rlt${this.sfx}M${i}`, 'up')
      // data: a link on bridge A
      const dataIp = `10.${a}.${b + 1}.${10 + i}`
      const dataLink = `rlt${this.sfx}d${i}`
      ip('link', 'add', dataLink, 'type', 'veth', 'peer', 'name', `rlt${this.sfx}D${i}`)
      ip('link', 'set', dataLink, 'master', this.bridges[0], 'up')
      ip('link', 'set', `rlt${this.sfx}D${i}`, 'netns', netns)
      inNs('addr', 'add', `${dataIp}/24`, 'dev', `rlt${this.sfx}D${i}`)
      inNs('link', 'set', `rlt${this.sfx}D${i}`, 'up')
      this.nodes.push({ index: i, netns, mgmtIp, dataIp, dataLink })
    }
  }

  /** The command prefix that runs a program inside node `i`'s namespace. */
  wrap(i: number): string[] {
    return ['ip', 'netns', 'exec', this.nodes[i - 1]!.netns]
  }

  /** Cuts the nodes `side` (1-based) off from the others: their data links move to bridge B. */
  partition(side: number[]): void {
    for (const i of side) {
      const link = this.nodes[i - 1]!.dataLink
      ip('link', 'set', link, 'nomaster')
      ip('link', 'set', link, 'master', this.bridges[1])
      this.partitioned.add(i)
    }
  }

  /** Joins every data link to bridge A again. */
  heal(): void {
    for (const i of this.partitioned) {
      const link = this.nodes[i - 1]!.dataLink
      ip('link', 'set', link, 'nomaster')
      ip('link', 'set', link, 'master', this.bridges[0])
    }
    this.partitioned.clear()
  }

  /** Whether node `from` can open a TCP connection to `host:port` (a probe run inside its namespace). */
  canConnect(from: number, host: string, port: number): boolean {
    try {
      const out = execFileSync('ip', ['netns', 'exec', this.nodes[from - 1]!.netns, process.execPath, '-e',
        `const s=require('net').connect(${port},'${host}');s.setTimeout(1500,()=>{console.log('timeout');process.exit(0)});s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('error',(e)=>{console.log(e.code);process.exit(0)})`,
      ], { encoding: 'utf8', timeout: 10_000 })
      return out.includes('connected')
    } catch {
      return false
    }
  }

  /** Removes every namespace, link and bridge (kill the processes inside first: they keep a namespace alive). */
  destroy(): void {
    for (const node of this.nodes) {
      try {
        ip('netns', 'del', node.netns)
      } catch {
        // already gone
      }
      for (const link of [`rlt${this.sfx}m${node.index}`, node.dataLink]) {
        try {
          ip('link', 'del', link)
        } catch {
          // removed with its namespace
        }
      }
    }
    for (const bridge of this.bridges) {
      try {
        ip('link', 'del', bridge)
      } catch {
        // never made
      }
    }
  }
}
