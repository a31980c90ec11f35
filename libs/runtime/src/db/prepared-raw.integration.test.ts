import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { preparedRaw, type Db } from './db';

/** The named statements this connection has prepared (pg_prepared_statements is per session). */
async function preparedOn(trx: Db): Promise<Array<{ name: string; statement: string }>> {
  const { rows } = (await trx.raw('select name, statement from pg_prepared_statements order by name')) as {
    rows: Array<{ name: string; statement: string }>;
  };
  return rows;
}

describeWithPostgres('preparedRaw', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.raw('create schema prepared_t; create table prepared_t.items (id int primary key, label text)');
    await t.db.raw(`insert into prepared_t.items values (1, 'one'), (2, 'two'), (3, 'three')`);
  });
  afterAll(() => t.drop());

  const byId = 'select id, label from prepared_t.items where id = any(?::int[]) order by id';

  it('prepares a statement once per connection, under one name for one text, and runs it with each call its own values', async () => {
    await t.db.transaction(async (trx) => {
      const first = (await preparedRaw(trx, byId, [[1, 3]])) as { rows: unknown[] };
      const second = (await preparedRaw(trx, byId, [[2]])) as { rows: unknown[] };
      expect(first.rows).toEqual([
        { id: 1, label: 'one' },
        { id: 3, label: 'three' },
      ]);
      expect(second.rows).toEqual([{ id: 2, label: 'two' }]);
      const prepared = (await preparedOn(trx)).filter((p) => p.statement.includes('prepared_t.items'));
      expect(prepared).toHaveLength(1);
      expect(prepared[0]!.name).toMatch(/^svc_[0-9a-f]{24}$/);
      expect(prepared[0]!.statement).toContain('from prepared_t.items where id = any($1::int[])');
    });
  });

  it('gives another text another name, named bindings included', async () => {
    await t.db.transaction(async (trx) => {
      await preparedRaw(trx, byId, [[1]]);
      const { rows } = (await preparedRaw(trx, 'select label from prepared_t.items where id = :id', { id: 2 })) as { rows: unknown[] };
      expect(rows).toEqual([{ label: 'two' }]);
      const names = (await preparedOn(trx)).filter((p) => p.statement.includes('prepared_t.items')).map((p) => p.name);
      expect(new Set(names).size).toBe(2);
    });
  });

  it('finds the new table when its schema is renamed away and made again on the same connection (as a replay does)', async () => {
    await t.db.transaction(async (trx) => {
      expect(((await preparedRaw(trx, byId, [[1]])) as { rows: unknown[] }).rows).toEqual([{ id: 1, label: 'one' }]);
      await trx.raw('alter schema prepared_t rename to prepared_t_before');
      await trx.raw(`create schema prepared_t; create table prepared_t.items (id int primary key, label text); insert into prepared_t.items values (1, 'uno')`);
      expect(((await preparedRaw(trx, byId, [[1]])) as { rows: unknown[] }).rows).toEqual([{ id: 1, label: 'uno' }]);
      // A column added under it changes nothing for a statement that names its columns.
      await trx.raw('alter table prepared_t.items add column extra text');
      expect(((await preparedRaw(trx, byId, [[1]])) as { rows: unknown[] }).rows).toEqual([{ id: 1, label: 'uno' }]);
      await trx.raw('drop schema prepared_t cascade; alter schema prepared_t_before rename to prepared_t');
    });
  });

  it('reports a failing statement as raw does, and the connection goes on', async () => {
    await expect(preparedRaw(t.db, 'select id from prepared_t.items where id = ?::int', ['not a number'])).rejects.toThrow(/invalid input syntax for type integer/);
    const { rows } = (await preparedRaw(t.db, byId, [[3]])) as { rows: unknown[] };
    expect(rows).toEqual([{ id: 3, label: 'three' }]);
  });
});
