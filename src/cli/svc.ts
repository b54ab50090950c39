import { Command } from 'commander'
import { functionsCommand } from './functions-command.js'
import { keysCommand } from './keys-command.js'
import { nodeToolCommands, startCommand } from './node-command.js'
import { rufidCommand } from './rufid-command.js'
import { federationCommand } from './federation-command.js'
import { receiptsCommand } from './receipts-command.js'
import { VERSION } from '../daemon/version.js'
import { exitQuietlyOnBrokenPipe } from './connection.js'

/** `svc`: the command line for operators and developers. */
// positional options: `svc functions resolve X --version v2` is the subcommand's option, not the root's
const program = new Command('svc').description('svc-node command line').version(VERSION).enablePositionalOptions()
const node = new Command('node').description('run and manage a node').addCommand(startCommand())
for (const tool of nodeToolCommands()) node.addCommand(tool)
program.addCommand(node)
program.addCommand(rufidCommand())
program.addCommand(functionsCommand())
// the offline handler (LevelDB, the node's config) is loaded only when `keys create --admin` runs
program.addCommand(keysCommand({ admin: async (opts) => (await import('./admin-keys.js')).createAdminKeyOffline(opts) }))
program.addCommand(federationCommand())
program.addCommand(receiptsCommand())

// `svc … | head`: a reader that stops early ends svc quietly, not with an EPIPE stack trace
exitQuietlyOnBrokenPipe()
await program.parseAsync(process.argv)
