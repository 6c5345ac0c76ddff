// Red team of the migration rehearsal's report: what a pull request's SQL, its command's output and
// names, or production's values can make the report say. Each test asserts the safe outcome.
import { shownText, type Rehearsal } from "../../../rehearsal/rehearse";
import { markdown } from "../../../rehearsal/report";

const base: Rehearsal = {
  command: "sh migrate.sh",
  exitCode: 0,
  ms: 1000,
  output: "",
  statements: [],
  otherRewrites: [],
  rows: [],
  chunks: [],
  schema: [],
  aggregatesFailing: [],
  flags: [],
  samples: 10,
};

describe("literals never reach the report", () => {
  test("an E'' string with a backslash-escaped quote", () => {
    const text = shownText("UPDATE customers SET note = E'it\\'s alice@real.example and her card 4111111111111111' WHERE id = 1");
    expect(text).not.toContain("alice@real.example");
    expect(text).not.toContain("4111111111111111");
  });
  test("a dollar-quoted string whose tag holds a digit", () => {
    const text = shownText("UPDATE customers SET note = $q1$alice@real.example$q1$ WHERE id = 1");
    expect(text).not.toContain("alice@real.example");
  });
});

test("numbers stay as written, as docs/rehearsal.md says (a value that must not be shown is written as a string)", () => {
  expect(shownText("DELETE FROM customers WHERE id = 4711 AND note = 'alice@real.example'")).toBe(
    "DELETE FROM customers WHERE id = 4711 AND note = '…'",
  );
});

describe("the command's output cannot leave its code block", () => {
  test("a line of three backticks does not close the block: what follows is not rendered Markdown", () => {
    const md = markdown({
      ...base,
      exitCode: 1,
      flags: ["the migration failed (exit 1)"],
      output: "ERROR: boom\n```\n</details><img src=https://attacker.example/x.png> @octocat [approve here](https://attacker.example)\n```",
    });
    // The code block opened after "What the migration printed last:" ends (CommonMark: a fence of the same
    // character, at least as long) only after every line the command printed.
    const lines = (md.split("What the migration printed last:")[1] ?? "").split("\n");
    const open = lines.findIndex((l) => /^ {0,3}(`{3,}|~{3,})/.test(l));
    const fence = /^ {0,3}(`{3,}|~{3,})/.exec(lines[open] ?? "")?.[1] ?? "";
    const close = lines.findIndex(
      (l, i) => i > open && new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`).test(l),
    );
    const inside = lines.slice(open + 1, close).join("\n");
    expect(inside).toContain("ERROR: boom");
    expect(inside).toContain("@octocat [approve here](https://attacker.example)");
  });
});

describe("names from the database are not Markdown or HTML", () => {
  test("a relation named with HTML, a mention and a link, in the flags and the table", () => {
    // At most 63 bytes, as PostgreSQL's names are.
    const relation = 'public."<img src=//evil.io/x> @octocat [x](https://evil.io)"';
    const md = markdown({
      ...base,
      flags: [`statement 1: AccessExclusive on ${relation} for 2.00 s: production's writes to it would have waited that long`],
      statements: [
        {
          text: "ALTER TABLE x",
          ms: 2000,
          failed: false,
          locks: [{ relation, mode: "AccessExclusiveLock", ms: 2000, blocksWrites: true }],
          waited: [],
          rewrote: [],
          flags: ["x"],
        },
      ],
      rows: [{ table: relation, inserted: 1, updated: 0, deleted: 0 }],
    });
    // What GitHub renders: outside code spans (where HTML, links and mentions are text).
    const rendered = md.replace(/`[^`\n]*`/g, "");
    expect(rendered).not.toMatch(/<img/);
    expect(rendered).not.toMatch(/(^|[^\w&])@octocat/m);
    expect(rendered).not.toMatch(/(?<!\\)\]\(https:/);
  });
});

describe("literals never reach the report, whatever surrounds them", () => {
  test("an apostrophe in a comment does not shift which text is a literal", () => {
    const text = shownText(
      "-- the customer's email fixed\nUPDATE customers SET email = 'alice@real.example' WHERE email = 'alice@old.example'",
    );
    expect(text).not.toContain("alice@real");
    expect(text).not.toContain("alice@old");
  });
  test("an apostrophe in a quoted identifier does not either", () => {
    const text = shownText(`UPDATE "o'brien" SET email = 'alice@real.example' WHERE id = 3`);
    expect(text).not.toContain("alice@real");
  });
  test("a literal cut by pg_stat_activity's 1024 bytes (track_activity_query_size) is not shown either", () => {
    const text = shownText(
      `UPDATE settings SET value = '{"owner": "alice@real.example", "card": "4111 1111 1111 1111", "notes": "${"x".repeat(1000)}`.slice(
        0,
        1023,
      ),
    );
    expect(text).not.toContain("alice@real.example");
  });
});
