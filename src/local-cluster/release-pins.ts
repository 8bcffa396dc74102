/**
 * The sha256 of each official release file fakegpu fetches, by its official URL (which names the
 * component, version, architecture and file). Written by `npm run release-pins` from the checksums the
 * official hosts publish, over HTTPS; do not edit by hand. A file listed here must hash to its pin from
 * any host; a mirror serves nothing else.
 */
export const RELEASE_PINS: Readonly<Record<string, string>> = {};
