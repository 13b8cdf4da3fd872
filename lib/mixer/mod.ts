/**
 * The policy API (`proto/mixer/v1/mixer.proto`, service `mesh.mixer.v1.Mixer`): message codec,
 * global dictionary and compressed attributes. Shared by mesh-policy, its tests, benchmarks and
 * any client.
 * @module
 */

export { GLOBAL_DICTIONARY, GLOBAL_INDEX } from "./dictionary.ts";
export {
  AttributeError,
  compress,
  Compressor,
  decompress,
  Dictionary,
  TrackingBag,
} from "./attributes.ts";
export {
  type AttributeMatch,
  type CheckRequest,
  type CheckResponse,
  type CompressedAttributes,
  MIXER_LOADER_OPTIONS,
  MIXER_SERVICE,
  type MixerCodec,
  mixerCodec,
  type ProtoTime,
  type ReferencedAttributes,
  type ReportRequest,
} from "./proto.ts";
export {
  decodeCheck,
  decodeCheckRequest,
  type DecodedCheck,
  encodeCheckResponse,
  WireError,
} from "./wire.ts";
