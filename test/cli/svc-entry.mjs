// The `svc` program as src/cli/svc.ts composes it (see the lines handed to its owner), built from
// dist/ (`npm run build` first), for tests of the functions and keys commands. The offline
// `keys create --admin` handler is stubbed: it writes into a node's data directory.
import { Command } from 'commander'
import { functionsCommand } from '../../dist/cli/functions-command.js'
import { keysCommand } from '../../dist/cli/keys-command.js'

const program = new Command('svc').description('svc-node command line').version('0.0.0-test').enablePositionalOptions()
program.addCommand(functionsCommand())
program.addCommand(keysCommand({
  admin: async (opts) => {
    process.stdout.write(`admin handler: ${JSON.stringify({ name: opts.name, tenant: opts.tenant, dataDir: opts.dataDir, expiresDays: opts.expiresDays })}\n`)
  },
}))
await program.parseAsync(process.argv)
