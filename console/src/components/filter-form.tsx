import { useEffect, useState } from 'preact/hooks';

/**
 * A filter form over query parameters: its fields start from the address, and applying it goes to
 * the address with the new values (page 1).
 */
export function FilterForm(props: {
  label: string;
  fields: { name: string; label: string; type: 'text' | 'email' | 'date' | 'search' | 'select'; options?: readonly string[] }[];
  values: Record<string, string>;
  onApply: (values: Record<string, string>) => void;
}) {
  const [values, setValues] = useState(props.values);
  useEffect(() => setValues(props.values), [JSON.stringify(props.values)]);
  const set = (name: string, value: string) => setValues((v) => ({ ...v, [name]: value }));
  const submit = (event: Event) => {
    event.preventDefault();
    props.onApply(values);
  };
  const clear = () => {
    const empty = Object.fromEntries(props.fields.map((f) => [f.name, '']));
    setValues(empty);
    props.onApply(empty);
  };
  return (
    <form class="filters" role="search" aria-label={props.label} onSubmit={submit}>
      {props.fields.map((f) => {
        const id = `filter-${f.name}`;
        return (
          <div class="field" key={f.name}>
            <label for={id}>{f.label}</label>
            {f.type === 'select' ? (
              <select id={id} value={values[f.name] ?? ''} onChange={(e) => set(f.name, e.currentTarget.value)}>
                <option value="">Any</option>
                {f.options?.map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : (
              // Preact's input types are told apart by the literal `type`; any of these takes a text value
              <input id={id} type={f.type as 'text'} value={values[f.name] ?? ''} onInput={(e) => set(f.name, e.currentTarget.value)} />
            )}
          </div>
        );
      })}
      <div class="actions">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <button type="button" onClick={clear}>
          Clear
        </button>
      </div>
    </form>
  );
}

/** The values of `names` in the address's query ('' when absent). */
export function queryValues(url: URL, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [n, url.searchParams.get(n) ?? '']));
}
