-- Bounds published before they were exact (#37): a DECIMAL of more than 15 digits went through a
-- double, so its minValues or maxValues could lie inside the real range (1.00000000000000000001
-- published as 1), and file skipping dropped parts that match. Those columns' bounds are removed
-- (nullCount stays) until the rendition is made again; 15 digits or fewer were exact, and integers
-- beyond 2^53 were already left out.
UPDATE "file_renditions" AS r
SET "stats" = jsonb_set(
        jsonb_set(r."stats", '{minValues}', COALESCE(r."stats" -> 'minValues', '{}'::jsonb) - d.names),
        '{maxValues}', COALESCE(r."stats" -> 'maxValues', '{}'::jsonb) - d.names)
FROM (
    SELECT f."id", array_agg(c ->> 'name') AS names
    FROM "order_files" AS f
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(f."columns") = 'array' THEN f."columns" ELSE '[]'::jsonb END) AS c
    WHERE (c ->> 'type') ~* '^DECIMAL\(\s*(1[6-9]|[2-9][0-9])\s*,'
    GROUP BY f."id"
) AS d
WHERE r."file_id" = d."id" AND r."format" = 'parquet' AND jsonb_typeof(r."stats") = 'object';
