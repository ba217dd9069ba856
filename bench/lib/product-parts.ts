import { createWriteStream } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";

/**
 * `megabytes` of product CSV in 10 parts under `dir` (unique ids across parts, so a keyed snapshot
 * of them is valid): the table the publication benchmarks publish. Returns the parts' paths.
 */
export async function writeProductParts(dir: string, megabytes: number): Promise<string[]> {
  const parts: string[] = [];
  const perPart = Math.ceil((megabytes * 1024 * 1024) / 10);
  let id = 0;
  for (let part = 1; part <= 10; part++) {
    const file = path.join(dir, `products-part-${String(part).padStart(2, "0")}.csv`);
    parts.push(file);
    await pipeline(
      (async function* () {
        yield "id,sku,name,price,quantity,listed_at,category,note\n";
        for (let written = 0; written < perPart;) {
          const lines: string[] = [];
          for (let i = 0; i < 20_000; i++, id++) {
            lines.push(
              `${id},SKU-${id},"Product ${id}, deluxe",${(id % 10_000) / 100},${id % 500},2026-10-${String((id % 28) + 1).padStart(2, "0")} 08:00:00,cat-${id % 40},${id % 7 === 0 ? "" : `note ${id % 1000}`}`,
            );
          }
          const chunk = lines.join("\n") + "\n";
          written += chunk.length;
          yield chunk;
        }
      })(),
      createWriteStream(file),
    );
  }
  return parts;
}
