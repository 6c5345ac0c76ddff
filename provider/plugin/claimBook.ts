// What the resources of one run declare, shared by the run's plugin processes. The engine starts
// a plugin process per provider instance, so a fork renamed and moved to another provider (its
// successor adopts it under one process, the old resource is deleted under another) would be
// stopped or deleted by a delete that knew only its own process's declarations. Every process of
// one run is given the same engine, so the book is a file named after it (its address, process
// and start time): each declaration is a line appended to it (O_APPEND: whole lines, even from
// several processes), and a read takes every line, a resource's last declaration of a key winning.
// The engine ends its plugins with SIGKILL, so no process of the run can remove the book at its end:
// each plugin that starts removes the books of engines no longer running.
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { z } from "zod";
import type { Claim, ClaimBook } from "../rules/claims";

/** A book older than this belongs to a run long over, whatever its engine (where /proc cannot tell). */
const STALE_MS = 2 * 24 * 3600 * 1000;
/** A book's name: its engine's PID and start time, and a digest of its address. */
const BOOK = /^(\d+)-(\d*)-[0-9a-f]{16}\.jsonl$/;

export class SharedClaimBook implements ClaimBook {
  constructor(readonly file: string) {}

  record(key: string, claim: Claim<unknown>): void {
    fs.appendFileSync(this.file, `${JSON.stringify({ key, urn: claim.resource.urn, name: claim.resource.name, value: claim.value })}\n`, {
      mode: 0o600,
    });
  }

  claims(key: string): Claim<unknown>[] {
    let text: string;
    try {
      text = fs.readFileSync(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    const byUrn = new Map<string, Claim<unknown>>();
    for (const line of text.split("\n")) {
      const entry = parsed(line);
      if (entry?.key === key) byUrn.set(entry.urn, { resource: { urn: entry.urn, name: entry.name }, value: entry.value });
    }
    return [...byUrn.values()];
  }
}

const LINE = z.object({ key: z.string(), urn: z.string(), name: z.string(), value: z.unknown() });

function parsed(line: string): z.output<typeof LINE> | undefined {
  try {
    return LINE.parse(JSON.parse(line));
  } catch {
    // an empty line (the last), or one cut short by a killed process: no declaration
    return undefined;
  }
}

/** The book of the run whose engine is at `engineAddress` (this process's parent). */
export function claimBookOfRun(engineAddress: string): SharedClaimBook {
  const dir = path.join(os.tmpdir(), `pulumi-tigercloud-runs-${process.getuid?.() ?? "user"}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  removeStale(dir);
  const digest = crypto.createHash("sha256").update(engineAddress).digest("hex").slice(0, 16);
  return new SharedClaimBook(path.join(dir, `${process.ppid}-${startTimeOf(process.ppid) ?? ""}-${digest}.jsonl`));
}

/** A process's start time (Linux: /proc), so that a later engine at the same address and PID has another book. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return undefined;
  }
}

/** Removes the books of engines that are gone (another process, or none, at their PID), and old ones. */
function removeStale(dir: string): void {
  const canTell = startTimeOf(process.pid) !== undefined;
  for (const entry of fs.readdirSync(dir)) {
    const file = path.join(dir, entry);
    const book = BOOK.exec(entry);
    try {
      const engineGone = canTell && book !== null && startTimeOf(Number(book[1])) !== book[2];
      if (engineGone || Date.now() - fs.statSync(file).mtimeMs > STALE_MS) fs.rmSync(file, { force: true });
    } catch {
      // removed by another process meanwhile
    }
  }
}
