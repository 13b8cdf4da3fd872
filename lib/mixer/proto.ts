/**
 * Encoding and decoding of the policy API messages (`proto/mixer/v1/mixer.proto`) with
 * @grpc/proto-loader, loaded lazily. Decoded messages use the proto field names (snake_case),
 * int64 as numbers, and maps as plain objects keyed by the decimal index.
 * @module
 */

import type { Buffer } from "node:buffer";
import { decodeCheckRequest, encodeCheckResponse } from "./wire.ts";

/** Full name of the policy service. */
export const MIXER_SERVICE = "mesh.mixer.v1.Mixer";

/** Loader options shared by the server, its tests and clients. */
export const MIXER_LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
} as const;

/** One protobuf duration or timestamp as decoded. */
export interface ProtoTime {
  seconds?: number;
  nanos?: number;
}

/** `CompressedAttributes`, decoded. */
export interface CompressedAttributes {
  words?: string[];
  strings?: Record<string, number>;
  int64s?: Record<string, number>;
  doubles?: Record<string, number>;
  bools?: Record<string, boolean>;
  timestamps?: Record<string, ProtoTime>;
  durations?: Record<string, ProtoTime>;
  bytes?: Record<string, Uint8Array>;
  string_maps?: Record<string, { entries?: Record<string, number> }>;
}

/** `CheckRequest`, decoded. */
export interface CheckRequest {
  attributes?: CompressedAttributes;
  global_word_count?: number;
  deduplication_id?: string;
  quotas?: Record<string, { amount?: number; best_effort?: boolean }>;
}

/** One attribute match of `ReferencedAttributes`. */
export interface AttributeMatch {
  name: number;
  condition: "ABSENCE" | "EXACT" | "REGEX";
  regex?: string;
  map_key?: number;
}

/** `ReferencedAttributes`. */
export interface ReferencedAttributes {
  words: string[];
  attribute_matches: AttributeMatch[];
}

/** `CheckResponse`. */
export interface CheckResponse {
  precondition: {
    status: { code: number; message?: string };
    valid_duration: ProtoTime;
    valid_use_count: number;
    referenced_attributes?: ReferencedAttributes;
  };
  quotas?: Record<string, {
    valid_duration: ProtoTime;
    granted_amount: number;
    referenced_attributes?: ReferencedAttributes;
  }>;
}

/** `ReportRequest`, decoded. */
export interface ReportRequest {
  attributes?: CompressedAttributes[];
  default_words?: string[];
  global_word_count?: number;
}

/** Encoders and decoders of the two methods. */
export interface MixerCodec {
  decodeCheckRequest(b: Uint8Array): CheckRequest;
  encodeCheckRequest(m: CheckRequest): Buffer;
  decodeCheckResponse(b: Uint8Array): CheckResponse;
  encodeCheckResponse(m: CheckResponse): Uint8Array;
  decodeReportRequest(b: Uint8Array): ReportRequest;
  encodeReportRequest(m: ReportRequest): Buffer;
  encodeReportResponse(): Buffer;
  /** The package definition (for grpc-js clients and servers in tests and benchmarks). */
  // deno-lint-ignore no-explicit-any
  definition: any;
}

let cache: Promise<MixerCodec> | undefined;

/**
 * Loads mixer.proto once. The file is fetched next to this module (file: or http: URL) and
 * handed to proto-loader through a temporary file, so a program run from a URL works too.
 */
export function mixerCodec(): Promise<MixerCodec> {
  cache ??= (async () => {
    const loader = await import("../deps/proto_loader.ts");
    const url = new URL("../../proto/mixer/v1/mixer.proto", import.meta.url);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`Cannot read ${url}: HTTP ${res.status}`);
    const text = await res.text();
    const dir = await Deno.makeTempDir({ prefix: "mesh-mixer-proto-" });
    let pkg;
    try {
      await Deno.writeTextFile(`${dir}/mixer.proto`, text);
      pkg = loader.loadSync(`${dir}/mixer.proto`, MIXER_LOADER_OPTIONS);
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    // deno-lint-ignore no-explicit-any
    const svc = pkg[MIXER_SERVICE] as any;
    const { Check, Report } = svc;
    return {
      decodeCheckRequest,
      encodeCheckRequest: (m) => Check.requestSerialize(m),
      decodeCheckResponse: (b) => Check.responseDeserialize(b),
      encodeCheckResponse,
      decodeReportRequest: (b) => Report.requestDeserialize(b),
      encodeReportRequest: (m) => Report.requestSerialize(m),
      encodeReportResponse: () => Report.responseSerialize({}),
      definition: pkg,
    };
  })();
  cache.catch(() => cache = undefined);
  return cache;
}
