-- bench/sqlite's workload: a table of @ROWS@ rows written, indexed,
-- queried, grouped, joined, updated and deleted from. It starts by
-- dropping what an earlier run left.
DROP TABLE IF EXISTS item;
DROP TABLE IF EXISTS kind;
PRAGMA journal_mode = WAL;
CREATE TABLE kind(id INTEGER PRIMARY KEY, name TEXT);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
INSERT INTO kind SELECT i, 'kind-' || printf('%03d', i) FROM n;
CREATE TABLE item(id INTEGER PRIMARY KEY, kind INTEGER, name TEXT, price REAL, note TEXT);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @ROWS@)
INSERT INTO item SELECT i, (i * 7919) % 100, 'item-' || hex(randomblob(4)) || '-' || i,
  ((i * 104729) % 10007) / 7.0, substr('lorem ipsum dolor sit amet consectetur', 1 + i % 20)
FROM n;
COMMIT;
CREATE INDEX item_kind ON item(kind, price);
CREATE INDEX item_name ON item(name);
SELECT kind, count(*), round(avg(price), 2), max(length(note)) FROM item GROUP BY kind ORDER BY 3 DESC LIMIT 5;
SELECT k.name, count(*) FROM item i JOIN kind k ON k.id = i.kind WHERE i.price BETWEEN 100 AND 200 GROUP BY k.name ORDER BY 2 DESC LIMIT 5;
SELECT count(*) FROM item WHERE name LIKE '%-1234%';
SELECT id, name FROM item WHERE kind = 42 ORDER BY price DESC LIMIT 3;
UPDATE item SET price = price * 1.1 WHERE kind % 3 = 0;
DELETE FROM item WHERE id % 10 = 0;
SELECT count(*), round(sum(price), 1) FROM item;
