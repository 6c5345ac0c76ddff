// What the resources of one run declare, shared by the run's plugin processes. The engine starts
// a plugin process per provider instance, so a fork renamed and moved to another provider (its
// successor adopts it under one process, the old resource is deleted under another) would be
// stopped or deleted by a delete that knew only its own process's declarations. Every process of
// one run is given the same engine, so the book is a file named after it (its address, process
// and start time): each declaration is a line appended to it (O_APPEND: whole lines, even from
// several processes), and a read takes every line, a resource's last declaration of a key winning.
// The engine ends its plugins with SIGKILL, so no process of the run can remove the book at its end:
// each plugin that starts removes the books of engines no longer running.
//
// A line in the book can spare a fork a delete, so the book is trusted only where no one else can
// write: a folder of this user's alone (mode 0700, a real folder, not a link), each book a file of
// this user's, opened without following links. A shared temporary directory is anyone's: where
// that folder cannot be had as it must be, the run's declarations stay in this process, and the
// plugin says so (bookProblem).
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { z } from "zod";
import type { Claim, ClaimBook } from "../../rules/claims";
import { messageOf } from "../../text";

/** A book older than this belongs to a run long over, whatever its engine (where /proc cannot tell). */
const STALE_MS = 2 * 24 * 3600 * 1000;
/** A book's name: its engine's PID and start time, and a digest of its address. */
const BOOK = /^(\d+)-(\d*)-[0-9a-f]{16}\.jsonl$/;
/** Opened as a file, never through a link (a link planted at the book's name is refused). */
const NO_FOLLOW = fs.constants.O_NOFOLLOW ?? 0;

const uid = () => process.getuid?.();

export class SharedClaimBook implements ClaimBook {
  constructor(readonly file: string) {}

  record(key: string, claim: Claim<unknown>): void {
    const line = `${JSON.stringify({ key, urn: claim.resource.urn, name: claim.resource.name, value: claim.value })}\n`;
    const fd = fs.openSync(this.file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | NO_FOLLOW, 0o600);
    try {
      ownFile(fs.fstatSync(fd), this.file);
      fs.writeSync(fd, line);
    } finally {
      fs.closeSync(fd);
    }
  }

  claims(key: string): Claim<unknown>[] {
    let text: string;
    let fd: number;
    try {
      fd = fs.openSync(this.file, fs.constants.O_RDONLY | NO_FOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    try {
      ownFile(fs.fstatSync(fd), this.file);
      text = fs.readFileSync(fd, "utf8");
    } finally {
      fs.closeSync(fd);
    }
    const byUrn = new Map<string, Claim<unknown>>();
    for (const line of text.split("\n")) {
      const entry = parsed(line);
      if (entry?.key === key) byUrn.set(entry.urn, { resource: { urn: entry.urn, name: entry.name }, value: entry.value });
    }
    return [...byUrn.values()];
  }
}

/** A book is this user's own regular file, which no one else may write: anything else is refused, never read. */
function ownFile(stat: fs.Stats, file: string): void {
  const me = uid();
  if (!stat.isFile() || (me !== undefined && stat.uid !== me) || (stat.mode & 0o022) !== 0 || stat.nlink > 1)
    throw new Error(`${file} is not a file of this user's alone; the run's declarations are not read from it`);
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

/** The run's book, or why it could not be had (the declarations then stay in this process). */
export type RunBook = { book: SharedClaimBook } | { problem: string };

/** The folder the books live in: this user's own, in the temporary directory (TMPDIR, as the process's environment has it now). */
export const booksFolder = (tmp = process.env.TMPDIR || os.tmpdir()) =>
  path.join(path.resolve(tmp), `pulumi-tigercloud-runs-${uid() ?? "user"}`);

/** The book of the run whose engine is at `engineAddress` (this process's parent), in `folder`. */
export function claimBookOfRun(engineAddress: string, folder = booksFolder()): RunBook {
  const problem = privateFolderProblem(folder);
  if (problem) return { problem };
  removeStale(folder);
  return { book: new SharedClaimBook(bookPath(engineAddress, folder)) };
}

/** Where the book of the run whose engine is at `engineAddress` (this process's parent) is, in `folder`. */
export function bookPath(engineAddress: string, folder = booksFolder()): string {
  const digest = crypto.createHash("sha256").update(engineAddress).digest("hex").slice(0, 16);
  return path.join(folder, `${process.ppid}-${startTimeOf(process.ppid) ?? ""}-${digest}.jsonl`);
}

/**
 * Makes the folder (mode 0700), or finds it as it must be: a real folder (not a link), this
 * user's, that no one else may enter. Why not, when it is not.
 */
function privateFolderProblem(folder: string): string | undefined {
  try {
    fs.mkdirSync(folder, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") return `${folder} cannot be made (${messageOf(err)})`;
  }
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(folder);
  } catch (err) {
    return `${folder} cannot be read (${messageOf(err)})`;
  }
  const me = uid();
  if (stat.isSymbolicLink()) return `${folder} is a symbolic link, not a folder of this user's`;
  if (!stat.isDirectory()) return `${folder} is not a folder`;
  if (me !== undefined && stat.uid !== me) return `${folder} belongs to another user (uid ${stat.uid})`;
  if ((stat.mode & 0o077) !== 0) return `${folder} may be entered by other users (mode ${(stat.mode & 0o777).toString(8)}, not 700)`;
  return undefined;
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

/**
 * Removes the books of engines that are gone (another process, or none, at their PID), and old
 * ones: only files named as books, regular files of this user's. Nothing else in the folder is touched.
 */
function removeStale(dir: string): void {
  const canTell = startTimeOf(process.pid) !== undefined;
  for (const entry of fs.readdirSync(dir)) {
    const book = BOOK.exec(entry);
    if (book === null) continue;
    const file = path.join(dir, entry);
    try {
      const stat = fs.lstatSync(file);
      if (!stat.isFile() || stat.uid !== (uid() ?? stat.uid)) continue;
      const engineGone = canTell && startTimeOf(Number(book[1])) !== book[2];
      if (engineGone || Date.now() - stat.mtimeMs > STALE_MS) fs.rmSync(file, { force: true });
    } catch {
      // removed by another process meanwhile
    }
  }
}
