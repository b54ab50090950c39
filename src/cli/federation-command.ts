import { Command, InvalidArgumentError } from 'commander'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createFederationCa, issueNodeCertificate, readCa, writeCa, writeNodeCertificate, CA_CERT_FILE } from '../federation/certificates.js'
import { loadOrCreatePeerIdentity } from '../federation/identity.js'

const positiveInt = (value: string): number => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer')
  return n
}

/** `svc federation …`: federation CA, node certificates and the node's PeerId. */
export function federationCommand(): Command {
  const federation = new Command('federation').description('federation certificates and identity')

  const ca = new Command('ca').description('the federation certificate authority')
  ca.addCommand(new Command('init')
    .description('create a federation CA (ca.crt, ca.key with mode 0600)')
    .requiredOption('--out <dir>', 'directory to write the CA into')
    .option('--name <name>', 'CA common name', 'svc federation CA')
    .option('--days <n>', 'validity in days', positiveInt, 3650)
    .action(async (opts: { out: string; name: string; days: number }) => {
      const files = await writeCa(opts.out, createFederationCa({ name: opts.name, days: opts.days }))
      process.stdout.write(`${JSON.stringify({ ca_cert: files.certFile, ca_key: files.keyFile })}\n`)
    }))
  federation.addCommand(ca)

  const cert = new Command('cert').description('node certificates')
  cert.addCommand(new Command('issue')
    .description('issue a node certificate binding a libp2p PeerId (node.crt, node.key, ca.crt)')
    .requiredOption('--ca <dir>', 'directory holding ca.crt and ca.key')
    .option('--peer-id <id>', 'the PeerId to bind')
    .option('--data-dir <dir>', 'take the PeerId from (or create) <dir>/peer-key')
    .requiredOption('--out <dir>', 'directory to write the certificate into')
    .option('--days <n>', 'validity in days', positiveInt, 365)
    .action(async (opts: { ca: string; peerId?: string; dataDir?: string; out: string; days: number }) => {
      if ((opts.peerId === undefined) === (opts.dataDir === undefined)) {
        throw new InvalidArgumentError('give exactly one of --peer-id and --data-dir')
      }
      const peerId = opts.peerId ?? (await loadOrCreatePeerIdentity(opts.dataDir!)).peerId
      const authority = await readCa(opts.ca)
      const issued = issueNodeCertificate(authority, peerId, { days: opts.days })
      const files = await writeNodeCertificate(opts.out, issued, await readFile(join(opts.ca, CA_CERT_FILE), 'utf8'))
      process.stdout.write(`${JSON.stringify({ peer_id: peerId, serial: issued.serial, fingerprint256: issued.fingerprint256, cert_file: files.certFile, key_file: files.keyFile, ca_file: files.caFile })}\n`)
    }))
  federation.addCommand(cert)

  federation.addCommand(new Command('peer-id')
    .description('print the node PeerId, creating <data-dir>/peer-key (0600) when missing')
    .requiredOption('--data-dir <dir>', 'the node data directory')
    .action(async (opts: { dataDir: string }) => {
      process.stdout.write(`${(await loadOrCreatePeerIdentity(opts.dataDir)).peerId}\n`)
    }))
  return federation
}
