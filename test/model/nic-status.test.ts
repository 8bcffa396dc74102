import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildMachine } from '../../src/model/hardware/build.js';
import { nicDeviceName } from '../../src/model/nic/attributes.js';
import { decodeNicConfig } from '../../src/model/nic/config.js';
import { nicClaimStatus, nicLink } from '../../src/model/nic/status.js';
import type { AllocationConfig, ResourceClaim } from '../../src/kube/types/claim.js';
import { resolveProfile } from '../../src/process/profile-file.js';

const NODE = 'node-a';
const NOW = new Date('2026-12-03T10:11:12.345Z');

function claim(devices: string[], config: AllocationConfig[] = [], driver = 'dra.net'): ResourceClaim {
  return {
    metadata: { name: 'nic', namespace: 'team', uid: 'u1' },
    status: {
      allocation: {
        devices: {
          results: devices.map((device, i) => ({ request: `r${i}`, driver, pool: NODE, device })),
          config,
        },
      },
    },
  };
}

const opaque = (parameters: unknown, requests?: string[]): AllocationConfig => ({
  source: 'FromClaim',
  ...(requests ? { requests } : {}),
  opaque: { driver: 'dra.net', parameters },
});

function statusOf(profile: string, c: ResourceClaim) {
  const m = buildMachine(resolveProfile(profile), { nodeName: NODE, dynamicMig: false });
  const links = new Map(m.nics.map((n) => [nicDeviceName(n), nicLink(n, m.nodeName, NODE)]));
  return { m, ...nicClaimStatus(c, { driver: 'dra.net', pool: NODE, link: (d) => links.get(d), now: NOW }) };
}

describe("a NIC claim's status, as DRANET applies it", () => {
  it('gives a netdev its host name, MAC and conditions, and no ips where the host interface has none', () => {
    const { m, apply } = statusOf('dgx-h100', claim(['pci-0000-18-00-0']));
    const nic = m.nics.find((n) => n.busId === '0000:18:00.0');
    assert.deepEqual(apply, {
      kind: 'ResourceClaim',
      apiVersion: 'resource.k8s.io/v1',
      metadata: { name: 'nic', namespace: 'team' },
      status: {
        devices: [
          {
            driver: 'dra.net',
            pool: NODE,
            device: 'pci-0000-18-00-0',
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                lastTransitionTime: '2026-12-03T10:11:12Z',
                reason: 'NetworkDeviceReady',
              },
              {
                type: 'NetworkReady',
                status: 'True',
                lastTransitionTime: '2026-12-03T10:11:12Z',
                reason: 'NetworkReady',
              },
            ],
            networkData: { interfaceName: 'ibp24s0', hardwareAddress: nic?.mac },
          },
        ],
      },
    });
    // The body reads as client-go's apply configuration writes it: its field order.
    assert.match(
      JSON.stringify(apply),
      /^\{"kind":"ResourceClaim","apiVersion":"resource\.k8s\.io\/v1","metadata":\{"name":"nic","namespace":"team"\}/,
    );
    assert.match(JSON.stringify(apply), /"networkData":\{"interfaceName":"ibp24s0","hardwareAddress":/);
  });

  it("takes the interface name, addresses and MAC from the request's config, the first that applies", () => {
    const c = claim(
      ['pci-0000-18-00-0', 'pci-0000-40-00-0'],
      [
        opaque({ interface: { name: 'other' } }, ['r9']),
        opaque(
          {
            interface: {
              name: 'net1',
              addresses: ['10.0.0.5/24', '2001:db8::5/64'],
              hardwareAddr: 'AA-BB-CC-DD-EE-FF',
            },
          },
          ['r0'],
        ),
        opaque({ interface: { name: 'net2' } }),
      ],
    );
    const [a, b] = statusOf('dgx-h100', c).apply?.status.devices ?? [];
    assert.deepEqual(a?.networkData, {
      interfaceName: 'net1',
      ips: ['10.0.0.5/24', '2001:db8::5/64'],
      hardwareAddress: 'aa:bb:cc:dd:ee:ff',
    });
    assert.equal(b?.networkData?.interfaceName, 'net2');
  });

  it("gives the host interface's address where the profile has one, and RDMA-only functions a Ready condition alone", () => {
    const { apply } = statusOf('aws-p4d.24xlarge', claim(['pci-0000-10-1b-0', 'pci-0000-20-01-0']));
    const [efa, eth] = apply?.status.devices ?? [];
    assert.deepEqual(efa, {
      driver: 'dra.net',
      pool: NODE,
      device: 'pci-0000-10-1b-0',
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          lastTransitionTime: '2026-12-03T10:11:12Z',
          reason: 'RDMAOnlyDeviceReady',
        },
      ],
    });
    assert.deepEqual(Object.keys(eth?.networkData ?? {}), ['interfaceName', 'hardwareAddress']);
    assert.equal(eth?.networkData?.interfaceName, 'ens65');
    const m = buildMachine(resolveProfile('aws-p4d.24xlarge'), { nodeName: NODE, dynamicMig: false });
    const ens65 = m.nics.find((n) => n.ifName === 'ens65');
    assert.ok(ens65);
    const link = nicLink({ ...ens65, ipv4: '192.168.155.224/19' }, NODE, NODE);
    const withIp = nicClaimStatus(claim(['pci-0000-20-01-0']), {
      driver: 'dra.net',
      pool: NODE,
      link: () => link,
      now: NOW,
    });
    assert.deepEqual(withIp.apply?.status.devices[0]?.networkData?.ips, ['192.168.155.224/19']);
  });

  it('writes nothing for claims of other drivers (NVIDIA writes no GPU claim status) or a config DRANET refuses', () => {
    assert.equal(statusOf('dgx-h100', claim(['gpu-0'], [], 'gpu.nvidia.com')).apply, null);
    const bad = statusOf('dgx-h100', claim(['pci-0000-18-00-0'], [opaque({ interface: { name: 5 } })]));
    assert.equal(bad.apply, null);
    assert.deepEqual(bad.errors, [
      'failed to unmarshal JSON data: json: cannot unmarshal number into Go struct field InterfaceConfig.interface.name of type string',
    ]);
  });

  it('derives a MAC the profile did not fix for the node it is on, as the fleet publishes it', () => {
    const m = buildMachine(resolveProfile('dgx-h100'), { nodeName: 'template', dynamicMig: false });
    const nic = m.nics[0];
    assert.ok(nic);
    const there = nicLink(nic, 'template', NODE).mac;
    const built = buildMachine(resolveProfile('dgx-h100'), { nodeName: NODE, dynamicMig: false }).nics[0]
      ?.mac;
    assert.equal(there, built);
    assert.notEqual(there, nic.mac);
  });
});

describe("DRANET's config, decoded as its ValidateConfig does", () => {
  // Each message below is what DRANET v1.4.0 pkg/apis.ValidateConfig printed for the same input.
  const cases: [unknown, string[]][] = [
    [
      { interface: { name: 'net1', foo: 1 }, bar: 2 },
      [
        'failed to unmarshal strict JSON data: unknown field "interface.foo"',
        'failed to unmarshal strict JSON data: unknown field "bar"',
      ],
    ],
    [
      { interface: { addresses: ['10.0.0.5', 'x/24'], dhcp: true } },
      [
        `interface.addresses[0]: invalid IP CIDR format '10.0.0.5': netip.ParsePrefix("10.0.0.5"): no '/'`,
        `interface.addresses[1]: invalid IP CIDR format 'x/24': netip.ParsePrefix("x/24"): ParseAddr("x"): unable to parse IP`,
        'interface: dhcp and addresses are mutually exclusive',
      ],
    ],
    [
      { interface: { hardwareAddr: 'zz' } },
      [`interface.hardwareAddress: invalid Hardware Address format 'zz': address zz: invalid MAC address`],
    ],
    [
      { interface: 'x' },
      [
        'failed to unmarshal JSON data: json: cannot unmarshal string into Go struct field NetworkConfig.interface of type apis.InterfaceConfig',
      ],
    ],
    [
      'str',
      [
        'failed to unmarshal JSON data: json: cannot unmarshal string into Go value of type apis.NetworkConfig',
      ],
    ],
    [
      { interface: { addresses: '10.0.0.1/24' } },
      [
        'failed to unmarshal JSON data: json: cannot unmarshal string into Go struct field InterfaceConfig.interface.addresses of type []string',
      ],
    ],
    [
      { interface: { name: 'a very/long name!x' } },
      [
        "interface.name: name 'a very/long name!x' exceeds maximum length of 15 characters",
        "interface.name: name 'a very/long name!x' cannot contain '/'",
        "interface.name: name 'a very/long name!x' cannot contain whitespace",
        "interface.name: name 'a very/long name!x' contains invalid character '!'. Only letters, digits, '-', '_', '.' are recommended",
      ],
    ],
    [
      { interface: { dhcp: 'yes' } },
      [
        'failed to unmarshal JSON data: json: cannot unmarshal string into Go struct field InterfaceConfig.interface.dhcp of type bool',
      ],
    ],
    [
      { interface: { addresses: [5] } },
      [
        'failed to unmarshal JSON data: json: cannot unmarshal number into Go struct field InterfaceConfig.interface.addresses of type string',
      ],
    ],
    [{}, []],
    [{ Interface: {} }, ['failed to unmarshal strict JSON data: unknown field "Interface"']],
    [{ interface: null }, []],
  ];
  for (const [input, errors] of cases)
    it(`${JSON.stringify(input)}: ${errors.length} error(s)`, () => {
      assert.deepEqual(decodeNicConfig(input).errors, errors);
    });

  it("gives Go's ParsePrefix messages for bad IPv4 and IPv6 prefixes", () => {
    const msgs = {
      '10.0.0.5/33': 'prefix length out of range',
      '10.0.0.5/024': 'bad bits after slash: "024"',
      '300.0.0.1/24': 'ParseAddr("300.0.0.1"): IPv4 field has value >255',
      '10.0..1/24': 'ParseAddr("10.0..1"): IPv4 field must have at least one digit (at ".1")',
      'fe80::1%eth0/64': 'IPv6 zones cannot be present in a prefix',
      '01.2.3.4/8': 'ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero',
      '1.2.3/8': 'ParseAddr("1.2.3"): IPv4 address too short',
      '1.2.3.4.5/8': 'ParseAddr("1.2.3.4.5"): IPv4 address too long',
      '1.2.3.a/8': 'ParseAddr("1.2.3.a"): unexpected character (at "a")',
    };
    for (const [a, msg] of Object.entries(msgs))
      assert.deepEqual(decodeNicConfig({ interface: { addresses: [a] } }).errors, [
        `interface.addresses[0]: invalid IP CIDR format '${a}': netip.ParsePrefix(${JSON.stringify(a)}): ${msg}`,
      ]);
    assert.deepEqual(
      decodeNicConfig({ interface: { addresses: ['2001:db8::1/64', '10.1.2.3/0'] } }).errors,
      [],
    );
    // Go adds where in a bad IPv6 address it stopped (` (at ":1")`); we name the failure only.
    assert.match(
      decodeNicConfig({ interface: { addresses: ['2001:db8:::1/64'] } }).errors[0] ?? '',
      /ParseAddr\("2001:db8:::1"\): each colon-separated field must have at least one digit/,
    );
  });
});
