/**
 * CRC-32C (Castagnoli), the checksum of a Kafka record batch, eight bytes at
 * a time ("slicing-by-8"). kafkajs computes it a byte at a time; over a
 * produce request of several hundred kilobytes that loop was a visible share
 * of the gateway's CPU.
 */
const TABLES = buildTables();

function buildTables(): Int32Array[] {
  const tables = Array.from({ length: 8 }, () => new Int32Array(256));
  const first = tables[0] as Int32Array;
  for (let n = 0; n < 256; n++) {
    let c = n;
    // 0x82f63b78: the Castagnoli polynomial, bit-reversed.
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    first[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = first[n] as number;
    for (let t = 1; t < 8; t++) {
      c = (first[c & 0xff] as number) ^ (c >>> 8);
      (tables[t] as Int32Array)[n] = c;
    }
  }
  return tables;
}

const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
];

/** The CRC-32C of `buf[start, end)`, as an unsigned 32-bit number. */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = ~0;
  let i = start;
  for (const last8 = end - 8; i <= last8; i += 8) {
    const a = crc ^ ((buf[i] as number) | ((buf[i + 1] as number) << 8) | ((buf[i + 2] as number) << 16) | ((buf[i + 3] as number) << 24));
    crc =
      (T7[a & 0xff] as number) ^
      (T6[(a >>> 8) & 0xff] as number) ^
      (T5[(a >>> 16) & 0xff] as number) ^
      (T4[a >>> 24] as number) ^
      (T3[buf[i + 4] as number] as number) ^
      (T2[buf[i + 5] as number] as number) ^
      (T1[buf[i + 6] as number] as number) ^
      (T0[buf[i + 7] as number] as number);
  }
  for (; i < end; i++) crc = (T0[(crc ^ (buf[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return ~crc >>> 0;
}
