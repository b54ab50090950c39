import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export const PEER_KEY_FILE = 'peer-key'

export interface PeerIdentity {
  privateKey: PrivateKey
  peerId: string
  /** where the key is kept */
  file: string
}

/**
 * The node's persistent libp2p identity: an Ed25519 key in `<dataDir>/peer-key` (protobuf, 0600),
 * created on first use. `file` overrides the location.
 */
export async function loadOrCreatePeerIdentity(dataDir: string, file = join(dataDir, PEER_KEY_FILE)): Promise<PeerIdentity> {
  let privateKey: PrivateKey
  try {
    privateKey = privateKeyFromProtobuf(new Uint8Array(await readFile(file)))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    privateKey = await generateKeyPair('Ed25519')
    await mkdir(dataDir, { recursive: true })
    await writeFile(file, privateKeyToProtobuf(privateKey), { mode: 0o600, flag: 'wx' }).catch(async (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e
      privateKey = privateKeyFromProtobuf(new Uint8Array(await readFile(file)))
    })
    await chmod(file, 0o600)
  }
  return { privateKey, peerId: peerIdFromPrivateKey(privateKey).toString(), file }
}
