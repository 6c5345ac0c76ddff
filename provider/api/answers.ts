// What came back, described for an error: the API's own error body, what is wrong with a body (by
// field path and type only: never a value, which could be a password), and sizes.
import type { z } from "zod";
import { ErrorBodySchema } from "./schemas";

/** The API's own error object (`{code, message, details}`, a string code or message at least), or undefined. */
export function apiErrorBody(
  text: string,
): { code: string | undefined; message: string | undefined; details: string | undefined } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const body = ErrorBodySchema.safeParse(json);
  if (!body.success) return undefined;
  const { code, message, details } = body.data;
  return code === undefined && message === undefined ? undefined : { code, message, details };
}

/** What is wrong with a body, by field path and type only: never a value, which could be a password. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], json: unknown): string {
  return issues
    .map((issue) => {
      const where = issue.path.map(String).join(".") || "(body)";
      const value = valueAt(json, issue.path);
      const got = typeName(value);
      if (issue.code === "invalid_type") return `${where}: expected ${issue.expected}, got ${got}`;
      if (issue.code === "too_small" && typeof value === "string")
        return `${where}: expected at least ${issue.minimum} characters, got ${value.length}`;
      if (issue.code === "invalid_union") return `${where}: matches none of the accepted forms, got ${got}`;
      return `${where}: ${issue.code.replace(/_/g, " ")}, got ${got}`;
    })
    .join("; ");
}

function valueAt(json: unknown, path: readonly PropertyKey[]): unknown {
  let here = json;
  for (const key of path) {
    if (typeof here !== "object" || here === null) return undefined;
    here = Reflect.get(here, key);
  }
  return here;
}

function typeName(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

export function formatBytes(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
