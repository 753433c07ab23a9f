/**
 * The packed binary forms of the `.bin` operations and of the live channel's batch frames:
 * little-endian float32 rays and points in, fixed-size records out. Records are read into one
 * typed array per field (struct of arrays), which is what a renderer or a physics step wants.
 */

/** Bytes of one ray: ox, oy, oz, dx, dy, dz as float32. */
export const RAY_BYTES = 24;
/** Bytes of one point: x, y, z as float32. */
export const POINT_BYTES = 12;
/** Bytes of one binary move (`PATCH /scenes/{id}/objects.bin`): int32 id, then a 3×4 float32 matrix (rows). */
export const MOVE_BYTES = 52;

/** One pick per ray (`records=surface`, 32 bytes each); a miss has `object` = `triangle` = -1. */
export interface PickRecords {
  count: number;
  t: Float32Array;
  object: Int32Array;
  triangle: Int32Array;
  u: Float32Array;
  v: Float32Array;
  /** N×3 */
  normal: Float32Array;
}

/** `records=primitive` (44 bytes each): the surface fields, then what was hit. */
export interface PrimitivePickRecords extends PickRecords {
  /** 0 triangle, 1 shape, 2 segment, 3 point, -1 miss */
  primitive: Int32Array;
  /** the segment's or the point's index, else -1 */
  index: Int32Array;
  /** the segment's parameter at the hit, else NaN */
  s: Float32Array;
}

/** The nearest surface point per query point (44 bytes each); none found: `object` -1. */
export interface ClosestRecords {
  count: number;
  distance: Float32Array;
  object: Int32Array;
  triangle: Int32Array;
  u: Float32Array;
  v: Float32Array;
  /** N×3 */
  point: Float32Array;
  /** N×3 */
  normal: Float32Array;
}

/** The first contact of a swept sphere per ray (44 bytes each); a miss has `object` -1. */
export interface SphereCastRecords {
  count: number;
  t: Float32Array;
  object: Int32Array;
  triangle: Int32Array;
  u: Float32Array;
  v: Float32Array;
  /** N×3: the point the sphere touches */
  point: Float32Array;
  /** N×3 */
  normal: Float32Array;
}

/** Containment per point (8 bytes each): the enclosing object or -1, and the signed distance (NaN when not asked). */
export interface ContainsRecords {
  count: number;
  object: Int32Array;
  signedDistance: Float32Array;
}

type Field = "f32" | "i32";

/**
 * Read `count` records of `fields` (name, kind, width in 4-byte words), little-endian, from `data`
 * starting at byte `offset`.
 */
function readRecords(data: ArrayBuffer, offset: number, fields: readonly (readonly [string, Field, number])[],
                     what: string): Record<string, Float32Array | Int32Array> & { count: number } {
  const words = fields.reduce((total, [, , width]) => total + width, 0);
  const recordBytes = 4 * words;
  const length = data.byteLength - offset;
  if (length < 0 || length % recordBytes !== 0) {
    throw new RangeError(`${what}: ${length} bytes is not a whole number of ${recordBytes}-byte records`);
  }
  const count = length / recordBytes;
  const view = new DataView(data, offset);
  const out: Record<string, Float32Array | Int32Array> = {};
  let word = 0;
  for (const [name, kind, width] of fields) {
    const column = kind === "f32" ? new Float32Array(count * width) : new Int32Array(count * width);
    for (let row = 0; row < count; row++) {
      for (let k = 0; k < width; k++) {
        const at = 4 * (row * words + word + k);
        column[row * width + k] = kind === "f32" ? view.getFloat32(at, true) : view.getInt32(at, true);
      }
    }
    out[name] = column;
    word += width;
  }
  return Object.assign(out, { count });
}

const PICK_FIELDS = [["t", "f32", 1], ["object", "i32", 1], ["triangle", "i32", 1], ["u", "f32", 1],
                     ["v", "f32", 1], ["normal", "f32", 3]] as const;
const PRIMITIVE_FIELDS = [...PICK_FIELDS, ["primitive", "i32", 1], ["index", "i32", 1], ["s", "f32", 1]] as const;
const CLOSEST_FIELDS = [["distance", "f32", 1], ["object", "i32", 1], ["triangle", "i32", 1], ["u", "f32", 1],
                        ["v", "f32", 1], ["point", "f32", 3], ["normal", "f32", 3]] as const;
const SPHERE_FIELDS = [["t", "f32", 1], ["object", "i32", 1], ["triangle", "i32", 1], ["u", "f32", 1],
                       ["v", "f32", 1], ["point", "f32", 3], ["normal", "f32", 3]] as const;
const CONTAINS_FIELDS = [["object", "i32", 1], ["signedDistance", "f32", 1]] as const;

/** Pick records (32 bytes each) from `data`, after `offset` bytes (a live batch frame's header). */
export function readPickRecords(data: ArrayBuffer, offset = 0): PickRecords {
  return readRecords(data, offset, PICK_FIELDS, "pick records") as unknown as PickRecords;
}

/** Pick records of `records=primitive` (44 bytes each). */
export function readPrimitivePickRecords(data: ArrayBuffer, offset = 0): PrimitivePickRecords {
  return readRecords(data, offset, PRIMITIVE_FIELDS, "primitive pick records") as unknown as PrimitivePickRecords;
}

export function readClosestRecords(data: ArrayBuffer): ClosestRecords {
  return readRecords(data, 0, CLOSEST_FIELDS, "closest-point records") as unknown as ClosestRecords;
}

export function readSphereCastRecords(data: ArrayBuffer): SphereCastRecords {
  return readRecords(data, 0, SPHERE_FIELDS, "sphere-cast records") as unknown as SphereCastRecords;
}

export function readContainsRecords(data: ArrayBuffer): ContainsRecords {
  return readRecords(data, 0, CONTAINS_FIELDS, "contains records") as unknown as ContainsRecords;
}

/** `values` as little-endian bytes (a copy only on a big-endian machine, where typed arrays are big-endian). */
export function littleEndian(values: Float32Array | Int32Array): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(values.byteLength);
  const view = new DataView(bytes.buffer);
  const float = values instanceof Float32Array;
  for (let i = 0; i < values.length; i++) {
    if (float) view.setFloat32(4 * i, values[i]!, true);
    else view.setInt32(4 * i, values[i]!, true);
  }
  return bytes;
}

/** Check that `values` holds whole rows of `width` numbers; the row count. */
export function rowsOf(values: Float32Array, width: number, what: string): number {
  if (values.length % width !== 0) {
    throw new RangeError(`${what}: ${values.length} numbers is not a whole number of rows of ${width}`);
  }
  return values.length / width;
}

/**
 * A binary move batch: per object its int32 id and the top three rows of its 4×4 object-to-world
 * matrix (12 float32, row by row; the last row is 0 0 0 1).
 *
 * @param ids N object ids
 * @param rows N×12 float32, each object's first three matrix rows
 */
export function packMoves(ids: ArrayLike<number>, rows: Float32Array): Uint8Array<ArrayBuffer> {
  if (rows.length !== 12 * ids.length) {
    throw new RangeError(`moves: ${ids.length} ids need ${12 * ids.length} matrix numbers, got ${rows.length}`);
  }
  const bytes = new Uint8Array(MOVE_BYTES * ids.length);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < ids.length; i++) {
    view.setInt32(MOVE_BYTES * i, ids[i]!, true);
    for (let k = 0; k < 12; k++) view.setFloat32(MOVE_BYTES * i + 4 + 4 * k, rows[12 * i + k]!, true);
  }
  return bytes;
}
