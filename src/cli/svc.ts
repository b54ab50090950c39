import { Command } from 'commander'
import { keysCommand } from './admin-keys.js'
import { startCommand } from './node-command.js'
import { rufidCommand } from './rufid-command.js'
import { VERSION } from '../daemon/version.js'

/** `svc`: the command line for operators and developers. */
const program = new Command('svc').description('svc-node command line').version(VERSION)
program.addCommand(new Command('node').description('run and manage a node').addCommand(startCommand()))
program.addCommand(rufidCommand())
program.addCommand(keysCommand())

await program.parseAsync(process.argv)
