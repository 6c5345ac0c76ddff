// The plugin's archives, one per platform the engine downloads for (scripts/pack-plugin.js --all),
// read as the engine unpacks them: each holds exactly the launcher, the bundle, package.json and
// the Node.js of its own platform, known by the binary's header (a foreign one cannot run here), of
// the version scripts/toolchain.js names. The first run downloads five foreign Node.js binaries
// (about 240 MB) into the cache; after that, packing is skipped and reading the six takes seconds.
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { promisify } from "util";
import * as zlib from "zlib";

jest.setTimeout(600_000);
const ROOT = path.join(__dirname, "..", "..");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const { packPlugins, PLATFORMS } = require("../../scripts/pack-plugin") as {
  packPlugins: (p: string[], options?: { reuse?: boolean }) => string[];
  PLATFORMS: string[];
};
const toolchain = require("../../scripts/toolchain") as { pluginNode: Record<string, { package: string; version: string }> };

/** What each platform's binary must say of itself in its header. */
const BINARY: Record<string, string> = {
  "linux-amd64": "ELF x86-64",
  "linux-arm64": "ELF aarch64",
  "darwin-amd64": "Mach-O x86_64",
  "darwin-arm64": "Mach-O arm64",
  "windows-amd64": "PE amd64",
  "windows-arm64": "PE arm64",
};

interface Entry {
  name: string;
  /** The tar type flag: "0" a file, "5" a folder (the engine unpacks only those and symlinks). */
  type: string;
  mode: number;
  body: Buffer;
}

/** The entries of a .tar.gz, in order (ustar headers: name, mode, size, type, prefix). */
async function entriesOf(archive: string): Promise<Entry[]> {
  const tar = await promisify(zlib.gunzip)(fs.readFileSync(archive));
  const field = (block: Buffer, at: number, length: number) =>
    block
      .subarray(at, at + length)
      .toString("latin1")
      .replace(/\0.*$/s, "");
  const entries: Entry[] = [];
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const size = parseInt(field(header, 124, 12).trim() || "0", 8);
    const prefix = field(header, 345, 155);
    entries.push({
      name: (prefix ? `${prefix}/` : "") + field(header, 0, 100),
      type: field(header, 156, 1) || "0",
      mode: parseInt(field(header, 100, 8).trim(), 8),
      body: tar.subarray(at + 512, at + 512 + size),
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

/** The format and machine a binary's header names, such as "ELF x86-64", or what it is not. */
function binaryKind(bin: Buffer): string {
  if (bin.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    // ELFCLASS64, little-endian; e_machine at 18.
    if (bin[4] !== 2 || bin[5] !== 1) return "ELF, not 64-bit little-endian";
    const machine = bin.readUInt16LE(18);
    return `ELF ${{ 0x3e: "x86-64", 0xb7: "aarch64" }[machine] ?? `machine 0x${machine.toString(16)}`}`;
  }
  if (bin.length >= 8 && bin.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = bin.readUInt32LE(4);
    return `Mach-O ${{ 0x01000007: "x86_64", 0x0100000c: "arm64" }[cpu] ?? `cputype 0x${cpu.toString(16)}`}`;
  }
  if (bin.subarray(0, 2).toString("latin1") === "MZ") {
    const pe = bin.readUInt32LE(0x3c);
    if (bin.subarray(pe, pe + 4).toString("latin1") !== "PE\0\0") return "MZ without a PE header";
    const machine = bin.readUInt16LE(pe + 4);
    return `PE ${{ 0x8664: "amd64", 0xaa64: "arm64" }[machine] ?? `machine 0x${machine.toString(16)}`}`;
  }
  return `unknown, starting ${bin.subarray(0, 8).toString("hex")}`;
}

const sha256 = (b: Buffer) => crypto.createHash("sha256").update(b).digest("hex");
const byName = (entries: Entry[]) => new Map(entries.map((e) => [e.name, e]));

let archives: Map<string, string>;
/** Each archive's plugin.js, by its sha256. */
const bundles = new Map<string, string>();
beforeAll(() => {
  archives = new Map(packPlugins(PLATFORMS).map((archive, i) => [PLATFORMS[i]!, archive]));
});

test("six archives, named as the engine asks a release for them: pulumi-resource-tigercloud-vVERSION-OS-ARCH.tar.gz", () => {
  expect([...PLATFORMS].sort()).toEqual(Object.keys(BINARY).sort());
  for (const [platform, archive] of archives) {
    expect(path.basename(archive)).toBe(`pulumi-resource-tigercloud-v${VERSION}-${platform}.tar.gz`);
  }
});

// One at a time: each archive unpacked is about 150 MB.
describe.each(Object.keys(BINARY))("%s", (platform) => {
  const windows = platform.startsWith("windows-");
  const launcherName = windows ? "pulumi-resource-tigercloud.cmd" : "pulumi-resource-tigercloud";
  const nodeName = windows ? "node/node.exe" : "node/node";
  let entries: Map<string, Entry>;
  beforeAll(async () => {
    entries = byName(await entriesOf(archives.get(platform)!));
    const bundle = entries.get("./plugin.js")?.body;
    if (bundle) bundles.set(platform, sha256(bundle));
  });
  afterAll(() => {
    entries = new Map();
  });
  const body = (name: string) => entries.get(`./${name}`)!.body;

  test("exactly the launcher, plugin.js, package.json and Node.js (with its LICENSE but on Windows), as plain files and folders", () => {
    const files = [launcherName, "plugin.js", "package.json", nodeName, ...(windows ? [] : ["node/LICENSE"])];
    expect([...entries.values()].map((e) => `${e.type} ${e.name}`).sort()).toEqual(
      ["5 ./", "5 ./node/", ...files.map((f) => `0 ./${f}`)].sort(),
    );
    expect(body("package.json").toString()).toBe(`${JSON.stringify({ name: "pulumi-tigercloud", version: VERSION }, null, 2)}\n`);
    if (!windows) expect(body("node/LICENSE").toString()).toMatch(/^Node\.js is licensed for use as follows:/);
  });

  test("the launcher runs the archive's own Node.js on plugin.js, both beside it, with the engine's arguments", () => {
    const text = body(launcherName).toString();
    if (windows) {
      // cmd.exe reads CRLF lines: no line ends in a bare LF.
      expect(text.split("\r\n").some((line) => line.includes("\n"))).toBe(false);
      expect(text.split("\r\n")[0]).toBe("@echo off");
      // %~dp0: the launcher's own folder (with its trailing backslash); %*: every argument.
      const [, node, code] = /^"%~dp0([^"]+)" "%~dp0([^"]+)" %\*$/m.exec(text) ?? [];
      expect([node, code]).toEqual(["node\\node.exe", "plugin.js"]);
    } else {
      expect(text.startsWith("#!/bin/sh\n")).toBe(true);
      expect(text).toContain('here=$(dirname "$0")\n');
      const [, node, code] = /^exec "\$here\/([^"]+)" "\$here\/([^"]+)" "\$@"$/m.exec(text) ?? [];
      expect([node, code]).toEqual([nodeName, "plugin.js"]);
      // The engine keeps each file's mode from the archive and runs only an executable launcher.
      expect(entries.get(`./${launcherName}`)!.mode & 0o777).toBe(0o755);
      expect(entries.get(`./${nodeName}`)!.mode & 0o777).toBe(0o755);
    }
  });

  test(`Node.js is a binary for ${platform}, of the version scripts/toolchain.js names`, () => {
    const node = body(nodeName);
    expect(binaryKind(node)).toBe(BINARY[platform]);
    // A foreign binary cannot be asked its version: its own headers' download URL names it.
    const { version } = toolchain.pluginNode[platform]!;
    expect(node.includes(`/download/release/v${version}/node-v${version}-headers.tar.gz`)).toBe(true);
  });
});

test("plugin.js is the same bundle in every archive", () => {
  expect([...bundles.keys()].sort()).toEqual(Object.keys(BINARY).sort());
  expect(new Set(bundles.values()).size).toBe(1);
});

test("packed again from the same inputs, an archive is the same bytes (a release run twice finds its archives already published)", () => {
  const platform = PLATFORMS[0] as string;
  const archive = archives.get(platform) as string;
  const before = crypto.createHash("sha256").update(fs.readFileSync(archive)).digest("hex");
  // Packed anew: neither this checkout's archive nor the one the project's cache keeps taken.
  const [again] = packPlugins([platform], { reuse: false });
  expect(again).toBe(archive);
  expect(crypto.createHash("sha256").update(fs.readFileSync(archive)).digest("hex")).toBe(before);
});
