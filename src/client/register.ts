/**
 * `node --import svc-node/client/register app.js` (or `--import <path>/dist/client/register.js`):
 * registers the `svc://` import hooks before the application starts, configured from `SVC_URL`,
 * `SVC_TOKEN` and `SVC_NAMESPACE`. Static `import add from 'svc://<rufid_short>'` needs this form.
 */
import { registerSvcLoader } from './loader.js'

registerSvcLoader()
