// A provider instance's settings: the README's Configuration table, given to an explicit provider
// (`new tigercloud.Provider(...)`, a YAML `pulumi:providers:tigercloud` resource) or, for the
// default provider, from the stack's `tigercloud:*` config. Checked at preview (CheckConfig),
// each wrong one named; read by the lifecycles through the same ConfigLookup as stack config, so
// the environment is still the fallback of every setting.
import { z } from "zod";
import { ConfigurationError } from "../../errors";
import { UNKNOWN } from "../../rules/inputs";
import { type ConfigLookup, isSwitch, resolveSettings, SETTING_SOURCES } from "../../settings";

export type SettingName = keyof typeof SETTING_SOURCES;
const NAMES = Object.keys(SETTING_SOURCES) as SettingName[];

/** A setting as a program may write it: text, or for a switch, a boolean or "true"/"false". */
const settingSchema = (name: SettingName) =>
  isSwitch(name)
    ? z.union([z.boolean(), z.enum(["true", "false"])], { error: 'must be true or false (or "true" or "false")' }).transform(String)
    : z.string({ error: "must be a string" });

/**
 * The settings of a provider instance, as text (the form stack config has), with what is wrong
 * with them: each failure names the setting and the rule.
 */
export function readSettings(given: object): {
  settings: Partial<Record<SettingName, string>>;
  failures: { property: string; reason: string }[];
} {
  const settings: Partial<Record<SettingName, string>> = {};
  const failures: { property: string; reason: string }[] = [];
  for (const [key, value] of Object.entries(given)) {
    if (value === undefined || value === null || key === "version" || key.startsWith("__")) continue;
    if (!(NAMES as string[]).includes(key)) {
      failures.push({ property: key, reason: `${key} is not a setting of the tigercloud provider; its settings are ${NAMES.join(", ")}` });
      continue;
    }
    const name = key as SettingName;
    // Not known until apply (a setting from another resource's output): judged at Configure.
    if (value === UNKNOWN) continue;
    const parsed = settingSchema(name).safeParse(value);
    if (parsed.success) settings[name] = parsed.data;
    else failures.push({ property: name, reason: `${name} ${parsed.error.issues[0]?.message ?? "is not valid"}` });
  }
  if (failures.length === 0) {
    // The connection rules the client applies (a URL, https or loopback, a whole key pair), judged
    // now. No credential at all is left to the first request: the environment may still give one.
    try {
      resolveSettings({}, lookupOf(settings));
    } catch (e) {
      if (e instanceof ConfigurationError && !/^No Tiger Cloud credentials/.test(e.message)) {
        const named = NAMES.find((n) => e.message.includes(SETTING_SOURCES[n].config)) ?? "apiUrl";
        failures.push({ property: named, reason: e.message });
      } else if (!(e instanceof ConfigurationError)) throw e;
    }
  }
  return { settings, failures };
}

/** The settings as the lookup the client and the lifecycles read (`tigercloud:apiUrl` and so on). */
export function lookupOf(settings: Partial<Record<SettingName, string>>): ConfigLookup {
  const byKey = new Map<string, string | undefined>(NAMES.map((n) => [SETTING_SOURCES[n].config, settings[n]]));
  return (key) => {
    const value = byKey.get(key);
    return value === "" ? undefined : value;
  };
}
