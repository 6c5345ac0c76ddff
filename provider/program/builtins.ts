// The SDK's closure serializer, which writes each dynamic resource's provider into state, loads
// every built-in module of Node.js to recognise them among captured values. On Node.js 26 those
// include node:ffi, whose first load prints "ExperimentalWarning: FFI is an experimental feature"
// between the lines of a user's plan. Node.js warns once per feature: loaded here first, with that
// one warning held back, it has nothing left to print. Every other warning passes.
import { builtinModules } from "module";

const QUIETED: Record<string, RegExp> = { "node:ffi": /^FFI is an experimental feature/ };

export function loadExperimentalBuiltinsQuietly(): void {
  for (const [name, message] of Object.entries(QUIETED)) {
    if (!builtinModules.includes(name)) continue;
    const emitWarning = process.emitWarning;
    process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
      const first = rest[0];
      const type = typeof first === "string" ? first : (first as { type?: string } | undefined)?.type;
      const text = typeof warning === "string" ? warning : warning.message;
      if (type === "ExperimentalWarning" && message.test(text)) return;
      return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
    } as typeof process.emitWarning;
    try {
      require(name);
    } catch {
      // Not loadable here (a flag it needs): then the SDK cannot load it either, and nothing prints.
    } finally {
      process.emitWarning = emitWarning;
    }
  }
}
