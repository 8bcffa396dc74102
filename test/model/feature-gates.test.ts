import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GATES, gatesOf, RULES, ruleMessage } from '../../src/model/feature-gates/gates.js';
import { formatFeatureGates, parseFeatureGates } from '../../src/model/feature-gates/parse.js';
import { parseRelease } from '../../src/model/device/release.js';

const parse = (text: string, release: '25.12' | '0.4' | '0.5' = '0.5') =>
  parseFeatureGates(text, release, '--feature-gates');
const refusal = (text: string, release: '25.12' | '0.4' | '0.5' = '0.5'): string => {
  try {
    parse(text, release);
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
};

/** NVIDIA's gate tables and ValidateFeatureGates, as read at v25.12.0, v0.4.1 and v0.5.0. */
describe("NVIDIA's feature gates", () => {
  it('each release has the gates its featuregates.go registers, with their stages and defaults', () => {
    assert.deepEqual(gatesOf('25.12'), [
      'TimeSlicingSettings',
      'MPSSupport',
      'IMEXDaemonsWithDNSNames',
      'PassthroughSupport',
      'DynamicMIG',
      'NVMLDeviceHealthCheck',
      'ComputeDomainCliques',
      'CrashOnNVLinkFabricErrors',
    ]);
    assert.deepEqual(gatesOf('0.4'), [...gatesOf('25.12'), 'DeviceMetadata']);
    assert.equal(gatesOf('0.5').length, 13);
    const on = gatesOf('0.5').filter((g) => GATES[g].default);
    assert.deepEqual(on, ['IMEXDaemonsWithDNSNames', 'ComputeDomainCliques', 'CrashOnNVLinkFabricErrors']);
    assert.ok(on.every((g) => GATES[g].stage === 'Beta'));
  });

  it("component-base's syntax: trimmed pairs, Go's booleans, its messages", () => {
    const g = parse(' TimeSlicingSettings = T ,,MPSSupport=0');
    assert.equal(g.TimeSlicingSettings, true);
    assert.equal(g.MPSSupport, false);
    assert.equal(g.ComputeDomainCliques, true, 'defaults stay');
    assert.equal(refusal('MPSSupport'), '--feature-gates: missing bool value for MPSSupport');
    assert.equal(
      refusal('MPSSupport=yes'),
      '--feature-gates: invalid value of MPSSupport=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
    );
    assert.match(
      refusal('Turbo=true'),
      /^--feature-gates: unrecognized feature gate: Turbo \(release 0\.5 has /,
    );
    assert.equal(parse('ContextualLogging=false').MPSSupport, false, "component-base's logging gates");
  });

  it('a gate the release does not have is refused naming the release', () => {
    assert.equal(
      refusal('ConsumableShares=true', '0.4'),
      '--feature-gates: unrecognized feature gate: ConsumableShares (NVIDIA DRA driver release 0.4 does not have it; it came in 0.5)',
    );
    // Stamped 0.4 by NVIDIA, but not in v0.4.1's table.
    assert.match(
      refusal('DRAListTypeAttributes=false', '0.4'),
      /release 0\.4 does not have it; it came in 0\.5/,
    );
    assert.match(
      refusal('DeviceMetadata=false', '25.12'),
      /release 25\.12 does not have it; it came in 0\.4/,
    );
  });

  it("NVIDIA's rules, first broken one first, in its words", () => {
    assert.equal(
      refusal('ComputeDomainCliques=true,IMEXDaemonsWithDNSNames=false'),
      '--feature-gates: feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames to also be enabled',
    );
    assert.equal(
      refusal('DynamicMIG=true,MPSSupport=true'),
      '--feature-gates: feature gate DynamicMIG is currently mutually exclusive with MPSSupport',
    );
    assert.equal(
      refusal('DynamicMIG=true,NVMLDeviceHealthCheck=true,MPSSupport=true'),
      '--feature-gates: feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck',
    );
    assert.deepEqual(RULES['0.5'].map(ruleMessage).slice(4), [
      'feature gate PassthroughSupport is currently mutually exclusive with NVMLDeviceHealthCheck',
      'feature gate DeviceMetadata requires PassthroughSupport to also be enabled',
    ]);
    assert.equal(RULES['25.12'].length, 4, 'v25.12.0 had only the first four');
  });

  it('AllAlpha sets every alpha gate not named, and then the rules apply', () => {
    assert.equal(
      refusal('AllAlpha=true'),
      '--feature-gates: feature gate DynamicMIG is currently mutually exclusive with PassthroughSupport',
    );
    assert.match(
      refusal('AllBeta=false'),
      /feature gate IMEXDaemonsWithDNSNames=false: fakegpu's ComputeDomain/,
    );
    assert.equal(parse('AllAlpha=false,MPSSupport=true').TimeSlicingSettings, false);
  });

  it('a gate fakegpu reproduces only at its default says so', () => {
    assert.equal(
      refusal('ComputeDomainCliques=false'),
      "--feature-gates: feature gate ComputeDomainCliques=false: fakegpu's ComputeDomain daemons have no other mode; fakegpu takes only ComputeDomainCliques=true, NVIDIA's default",
    );
    assert.equal(parse('CrashOnNVLinkFabricErrors=false').CrashOnNVLinkFabricErrors, false);
  });

  it('formats back only what differs from the defaults', () => {
    assert.equal(
      formatFeatureGates(parse('MPSSupport=true,CrashOnNVLinkFabricErrors=true')),
      'MPSSupport=true',
    );
  });

  it('"main" is refused with why: no readable source shows main after v0.5.0', () => {
    assert.throws(() => parseRelease('main', '--dra-driver-release'), {
      message:
        '--dra-driver-release: "main": no readable source shows NVIDIA\'s main after v0.5.0 (docs/fidelity.md says what was tried); give 0.5, the newest release',
    });
    assert.equal(parseRelease('v0.5', '--dra-driver-release'), '0.5');
  });
});
