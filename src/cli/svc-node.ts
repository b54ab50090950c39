import { Command } from 'commander'
import { startCommand } from './node-command.js'
import { VERSION } from '../daemon/version.js'

/** `svc-node`: the daemon's own entry point (`svc-node start`). */
const program = new Command('svc-node')
  .description('svc-node daemon: content-addressed functions, resolved and executed in a sandbox')
  .version(VERSION)
  .addCommand(startCommand(), { isDefault: true })

await program.parseAsync(process.argv)
