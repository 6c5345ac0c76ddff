// `NODE_OPTIONS=--require=pulumi-tigercloud/watchdog`: the engine's dynamic-provider process then
// watches its engine from its start, not from its first request. Without it, a provider process
// whose engine is killed before any resource reaches it never loads this package, and idles (no
// CPU, no writes) until killed. In any other node process this does nothing.
import { endWithEngine } from "../engineWatch";

endWithEngine();
