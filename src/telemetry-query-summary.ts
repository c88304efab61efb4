/**
 * `db.query.summary` of a SQL statement, following OpenTelemetry's database conventions ("Generating
 * a summary of the query"): each operation and the tables it names, in the order they appear —
 * `SELECT orders`, `INSERT shipping_details SELECT orders` (the convention's own example). Database spans
 * are named after it (src/telemetry.ts) instead of the prepared statement's id (`oas_k`).
 *
 * A small scanner, not a parser: string literals, comments and parameters are skipped; a common
 * table expression's name is not a table (the statements inside it are summarised where they
 * appear); a function in FROM (`unnest(…)`) and a subquery are anonymous. One choice of ours
 * (docs/decisions/131-tracing.md): keywords are upper-cased and a double-quoted lower-case name
 * loses its quotes (Kysely writes `select … from "orders"`, PostgreSQL reads `orders`).
 */

const MAX_SUMMARY = 255;

/** Operations wherever they appear. */
const DATA_OPERATIONS = new Set(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MERGE']);
/** Commands summarised by their first word (and their target for the few that name one). */
const COMMANDS = new Set([
  'BEGIN', 'START', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE', 'SET', 'RESET', 'SHOW', 'LOCK', 'TRUNCATE', 'CREATE', 'ALTER', 'DROP',
  'CALL', 'NOTIFY', 'LISTEN', 'UNLISTEN', 'VACUUM', 'ANALYZE', 'COPY', 'EXPLAIN', 'DO', 'PREPARE', 'EXECUTE', 'DEALLOCATE', 'DISCARD', 'GRANT', 'REVOKE', 'COMMENT',
]);
/** A data operation word after these is part of another clause: `FOR UPDATE`, `ON CONFLICT DO UPDATE`, `FOR NO KEY UPDATE`. */
const NOT_AN_OPERATION_AFTER = new Set(['FOR', 'DO', 'KEY', 'ON', 'OF']);
/** Words after which a table name follows. */
const TABLE_AFTER = new Set(['FROM', 'JOIN', 'INTO', 'UPDATE', 'USING', 'TABLE', 'TRUNCATE']);
/** Words that end a FROM list item's alias (or start the next clause). */
const CLAUSE_WORDS = new Set([
  'WHERE', 'JOIN', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'CROSS', 'NATURAL', 'ON', 'USING', 'GROUP', 'ORDER', 'LIMIT', 'OFFSET', 'HAVING', 'WINDOW',
  'UNION', 'INTERSECT', 'EXCEPT', 'RETURNING', 'SET', 'VALUES', 'FOR', 'WITH', 'DEFAULT', 'SELECT', 'ONLY', 'LATERAL', 'AS', 'FETCH', 'TABLESAMPLE',
]);

type Token = { kind: 'word' | 'quoted' | 'punct'; text: string };

/** Words, quoted names and punctuation, without literals, comments, parameters and casts' punctuation. */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (/\s/.test(c)) i++;
    else if (c === '-' && sql[i + 1] === '-') i = nextIndex(sql, '\n', i);
    else if (c === '/' && sql[i + 1] === '*') i = nextIndex(sql, '*/', i + 2);
    else if (c === "'") i = endOfQuoted(sql, i, "'");
    else if (c === '"') {
      const end = endOfQuoted(sql, i, '"');
      tokens.push({ kind: 'quoted', text: sql.slice(i, end) });
      i = end;
    } else if (c === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag) i = nextIndex(sql, tag[0], i + tag[0].length);
      else i = skipWhile(sql, i + 1, /[0-9]/);
    } else if (/[A-Za-z_]/.test(c)) {
      const end = skipWhile(sql, i, /[A-Za-z0-9_$]/);
      tokens.push({ kind: 'word', text: sql.slice(i, end) });
      i = end;
    } else {
      if (c === '(' || c === ')' || c === ',' || c === ';' || c === '.') tokens.push({ kind: 'punct', text: c });
      i++;
    }
  }
  return tokens;
}

function nextIndex(sql: string, end: string, from: number): number {
  const at = sql.indexOf(end, from);
  return at === -1 ? sql.length : at + end.length;
}

function skipWhile(sql: string, from: number, re: RegExp): number {
  let i = from;
  while (i < sql.length && re.test(sql[i])) i++;
  return i;
}

/** The index after a quoted text starting at `start`; a doubled quote is part of it. */
function endOfQuoted(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return sql.length;
}

const upper = (t: Token | undefined) => (t?.kind === 'word' ? t.text.toUpperCase() : undefined);

/** A name as PostgreSQL reads it: `"orders"` is `orders`; a name that needs its quotes keeps them. */
function nameOf(t: Token): string {
  if (t.kind !== 'quoted') return t.text;
  const inner = t.text.slice(1, -1);
  return /^[a-z_][a-z0-9_$]*$/.test(inner) ? inner : t.text;
}

/** The names of the statement's common table expressions (`name [(columns)] AS [NOT] [MATERIALIZED] (`). */
function cteNames(tokens: Token[]): Set<string> {
  const names = new Set<string>();
  for (let i = 0; i < tokens.length; i++) {
    const head = upper(tokens[i - 1]);
    if (head !== 'WITH' && head !== 'RECURSIVE' && tokens[i - 1]?.text !== ',') continue;
    if (tokens[i].kind === 'punct') continue;
    let j = i + 1;
    if (tokens[j]?.text === '(') {
      while (j < tokens.length && tokens[j].text !== ')') j++;
      j++;
    }
    if (upper(tokens[j]) !== 'AS') continue;
    j++;
    if (upper(tokens[j]) === 'NOT') j++;
    if (upper(tokens[j]) === 'MATERIALIZED') j++;
    if (tokens[j]?.text === '(') names.add(nameOf(tokens[i]));
  }
  return names;
}

/**
 * A qualified name (`pgboss.job`) starting at `i`, and the index after it; undefined for a subquery,
 * and for a function call unless a column list may follow the name (`INSERT INTO t (a, b)`).
 */
function tableAt(tokens: Token[], i: number, columnsMayFollow = false): { name: string; next: number } | undefined {
  const first = tokens[i];
  if (!first || first.kind === 'punct' || (first.kind === 'word' && CLAUSE_WORDS.has(first.text.toUpperCase()))) return undefined;
  const parts = [nameOf(first)];
  let j = i + 1;
  while (tokens[j]?.text === '.' && tokens[j + 1] && tokens[j + 1].kind !== 'punct') {
    parts.push(nameOf(tokens[j + 1]));
    j += 2;
  }
  if (tokens[j]?.text === '(' && !columnsMayFollow) return undefined;
  return { name: parts.join('.'), next: j };
}

/** The index after an optional alias (`AS x`, or a bare name that is no clause word). */
function skipAlias(tokens: Token[], i: number): number {
  let j = i;
  if (upper(tokens[j]) === 'AS') j++;
  const t = tokens[j];
  if (t && t.kind !== 'punct' && !(t.kind === 'word' && CLAUSE_WORDS.has(t.text.toUpperCase()))) j++;
  return j;
}

export function summarizeQuery(sql: string): string | undefined {
  const tokens = tokenize(sql);
  const first = upper(tokens[0]);
  if (first === undefined) return undefined;
  if (COMMANDS.has(first)) {
    const target = first === 'LOCK' || first === 'TRUNCATE' || first === 'CALL' ? tableAt(tokens, upper(tokens[1]) === 'TABLE' ? 2 : 1) : undefined;
    return target ? `${first} ${target.name}` : first;
  }
  const ctes = cteNames(tokens);
  const parts: { op: string; targets: string[] }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const word = upper(tokens[i]);
    if (word === undefined) continue;
    if (DATA_OPERATIONS.has(word)) {
      if (NOT_AN_OPERATION_AFTER.has(upper(tokens[i - 1]) ?? '')) continue;
      parts.push({ op: word, targets: [] });
      if (word !== 'UPDATE') continue;
    }
    if (!TABLE_AFTER.has(word) || parts.length === 0) continue;
    // FROM inside a function's parentheses (`extract(epoch FROM …)`) names no table
    if (word === 'FROM' && insideFunctionCall(tokens, i)) continue;
    let j = i + 1;
    if (upper(tokens[j]) === 'ONLY') j++;
    // FROM and USING take a list; the others one table
    for (;;) {
      const table = tableAt(tokens, j, word === 'INTO');
      if (!table) break;
      if (!ctes.has(table.name)) parts.at(-1)!.targets.push(table.name);
      j = skipAlias(tokens, table.next);
      if ((word !== 'FROM' && word !== 'USING') || tokens[j]?.text !== ',') break;
      j++;
    }
  }
  if (parts.length === 0) return first;
  return truncate(parts.flatMap((p) => [p.op, ...p.targets]));
}

/** True when the word at `i` is within the parentheses of a function call (`name(`). */
function insideFunctionCall(tokens: Token[], i: number): boolean {
  let depth = 0;
  for (let j = i - 1; j >= 0; j--) {
    if (tokens[j].text === ')') depth++;
    else if (tokens[j].text === '(') {
      if (depth === 0) {
        const before = tokens[j - 1];
        return before !== undefined && before.kind === 'word' && !CLAUSE_WORDS.has(before.text.toUpperCase()) && !['IN', 'EXISTS', 'ANY', 'ALL', 'SOME', 'ARRAY', 'FROM', 'JOIN'].includes(before.text.toUpperCase());
      }
      depth--;
    }
  }
  return false;
}

/** Words joined by spaces, cut at a word to at most 255 characters. */
function truncate(words: string[]): string {
  let out = '';
  for (const w of words) {
    const next = out === '' ? w : `${out} ${w}`;
    if (next.length > MAX_SUMMARY) break;
    out = next;
  }
  return out;
}

/** The summaries of the statements seen, by text: a service runs a bounded set of statement texts. */
const cache = new Map<string, string | undefined>();
const MAX_CACHED = 2000;

export function cachedQuerySummary(sql: string): string | undefined {
  if (cache.has(sql)) return cache.get(sql);
  const summary = summarizeQuery(sql);
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(sql, summary);
  return summary;
}
