/** A table's column headings; a heading marked `num` is aligned with its numbers. */
export function Head({ cols }: { cols: (string | [name: string, align: 'num'])[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) =>
          typeof c === 'string' ? (
            <th key={c} scope="col">
              {c}
            </th>
          ) : (
            <th key={c[0]} scope="col" class="num">
              {c[0]}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}
