// What a preparation's failure says about PostgreSQL's error: the step, the SQLSTATE and its
// condition, and the objects PostgreSQL names (schema, table, column, constraint, type), never
// PostgreSQL's message, whose text may quote a row (a trigger's RAISE, a key's value, a cast's input).
import type { DatabaseFailure } from "../../../database/session";
import { printable } from "../../../text";

/** PostgreSQL's condition names for the SQLSTATEs a preparation meets (errcodes.txt); others are said by their code. */
const CONDITIONS: Record<string, string> = {
  "08000": "connection_exception",
  "08006": "connection_failure",
  "0A000": "feature_not_supported",
  "21000": "cardinality_violation",
  "22001": "string_data_right_truncation",
  "22003": "numeric_value_out_of_range",
  "22007": "invalid_datetime_format",
  "22008": "datetime_field_overflow",
  "22012": "division_by_zero",
  "22023": "invalid_parameter_value",
  "22P02": "invalid_text_representation",
  "23502": "not_null_violation",
  "23503": "foreign_key_violation",
  "23505": "unique_violation",
  "23514": "check_violation",
  "23P01": "exclusion_violation",
  "25001": "active_sql_transaction",
  "25P02": "in_failed_sql_transaction",
  "2BP01": "dependent_objects_still_exist",
  "40001": "serialization_failure",
  "40P01": "deadlock_detected",
  "42501": "insufficient_privilege",
  "42601": "syntax_error",
  "42702": "ambiguous_column",
  "42703": "undefined_column",
  "42704": "undefined_object",
  "42710": "duplicate_object",
  "42P01": "undefined_table",
  "42P07": "duplicate_table",
  "42804": "datatype_mismatch",
  "42809": "wrong_object_type",
  "42883": "undefined_function",
  "53400": "configuration_limit_exceeded",
  "55000": "object_not_in_prerequisite_state",
  "55P03": "lock_not_available",
  "57014": "query_canceled",
  P0001: "raise_exception",
  XX000: "internal_error",
};

/**
 * One failure in words without PostgreSQL's text: "SQLSTATE 23505 (unique_violation), table
 * public.customers, constraint customers_email_key". `statement` (the user's own SQL) lets a syntax
 * error point at where it is.
 */
export function describeFailure(failure: DatabaseFailure, statement?: string): string {
  const { code } = failure;
  if (!code) return "the connection failed";
  if (!/^[0-9A-Z]{5}$/.test(code)) return `the connection failed (${printable(code).slice(0, 40)})`;
  const parts = [`SQLSTATE ${code}${CONDITIONS[code] ? ` (${CONDITIONS[code]})` : ""}`];
  const named = (what: string, value: string | undefined) => value && parts.push(`${what} ${printable(value).slice(0, 128)}`);
  named("schema", failure.schema);
  named("table", failure.table);
  named("column", failure.column);
  named("constraint", failure.constraint);
  named("type", failure.dataType);
  const at = Number(failure.position);
  if (statement && Number.isInteger(at) && at > 0) {
    // The user's own text, around where PostgreSQL stopped: the program declares it, it holds no row.
    const from = Math.max(0, at - 21);
    parts.push(`at character ${at}: "${printable(statement.slice(from, at + 20))}"`);
  }
  return parts.join(", ");
}
