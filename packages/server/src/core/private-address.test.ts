/**
 * Outbound webhook protection (protocol §9.3, §17.4): loopback, private, link-local, unspecified
 * and metadata addresses in every notation the WHATWG URL parser accepts (it normalises them before
 * isPrivateHost sees them), and resolved addresses as DNS answers them.
 */
import { describe, expect, it } from 'vitest';
import { isPrivateAddress, isPrivateHost } from './private-address.js';

const hostOf = (url: string) => new URL(url).hostname;

describe('isPrivateHost (URL host names)', () => {
  it.each([
    ['http://127.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.255.255.254/', '127.255.255.254'],
    ['http://[::1]/', '[::1]'],
    ['http://[0:0:0:0:0:0:0:1]/', '[::1]'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
    ['http://[::ffff:169.254.169.254]/', '[::ffff:a9fe:a9fe]'],
    ['http://[::127.0.0.1]/', '[::7f00:1]'],
    ['http://[64:ff9b::10.0.0.1]/', '[64:ff9b::a00:1]'],
    // The metadata address in three more IPv6 notations: local-use NAT64 (64:ff9b:1::/48, here
    // with the address at the /96 position and at the /48 position), IPv4-translated (SIIT), Teredo.
    ['http://[64:ff9b:1::169.254.169.254]/', '[64:ff9b:1::a9fe:a9fe]'],
    ['http://[64:ff9b:1:a9fe:a9:fe00::]/', '[64:ff9b:1:a9fe:a9:fe00::]'],
    ['http://[::ffff:0:169.254.169.254]/', '[::ffff:0:a9fe:a9fe]'],
    ['http://[::ffff:0:a9fe:a9fe]/', '[::ffff:0:a9fe:a9fe]'],
    ['http://[2001:0:4136:e378:8000:63bf:5601:5601]/', '[2001:0:4136:e378:8000:63bf:5601:5601]'],
    ['http://169.254.169.254/', '169.254.169.254'],
    ['http://10.0.0.1/', '10.0.0.1'],
    ['http://10.255.255.255/', '10.255.255.255'],
    ['http://172.16.0.1/', '172.16.0.1'],
    ['http://172.31.255.255/', '172.31.255.255'],
    ['http://192.168.1.1/', '192.168.1.1'],
    ['http://100.64.0.1/', '100.64.0.1'],
    ['http://0.0.0.0/', '0.0.0.0'],
    ['http://0/', '0.0.0.0'],
    ['http://[::]/', '[::]'],
    ['http://[fc00::1]/', '[fc00::1]'],
    ['http://[fd00:ec2::254]/', '[fd00:ec2::254]'],
    ['http://[fe80::1]/', '[fe80::1]'],
    ['http://[fec0::1]/', '[fec0::1]'],
    ['http://[2002:7f00:1::]/', '[2002:7f00:1::]'],
    ['http://[2002:a9fe:a9fe::1]/', '[2002:a9fe:a9fe::1]'],
    ['http://[ff02::1]/', '[ff02::1]'],
    ['http://224.0.0.1/', '224.0.0.1'],
    ['http://255.255.255.255/', '255.255.255.255'],
    ['http://198.18.0.1/', '198.18.0.1'],
    ['http://192.0.0.170/', '192.0.0.170'],
    ['http://localhost/', 'localhost'],
    ['http://LOCALHOST./', 'localhost.'],
    ['http://app.localhost/', 'app.localhost'],
    ['http://metadata.google.internal/', 'metadata.google.internal'],
    ['http://metadata.google.internal./', 'metadata.google.internal.'],
    ['http://metadata/', 'metadata'],
    ['http://metadata.azure.internal/', 'metadata.azure.internal'],
    ['http://instance-data/', 'instance-data'],
  ])('%s (host %s) is private', (url, host) => {
    expect(hostOf(url)).toBe(host);
    expect(isPrivateHost(hostOf(url))).toBe(true);
  });

  it.each([
    'http://example.com/',
    'http://8.8.8.8/',
    'http://1.1.1.1/',
    'http://9.255.255.255/',
    'http://11.0.0.0/',
    'http://126.255.255.255/',
    'http://128.0.0.0/',
    'http://172.15.255.255/',
    'http://172.32.0.0/',
    'http://192.167.255.255/',
    'http://192.169.0.0/',
    'http://169.253.255.255/',
    'http://100.63.255.255/',
    'http://100.128.0.0/',
    'http://223.255.255.255/',
    'http://[2606:4700:4700::1111]/',
    'http://[2001:4860:4860::8888]/',
    'http://[::ffff:8.8.8.8]/',
    'http://[fbff::1]/',
    'http://[2002:808:808::1]/',
    'http://[64:ff9b::8.8.8.8]/',
    'http://[::ffff:0:8.8.8.8]/',
    'http://[2001:1::1]/',
    'http://notlocalhost/',
    'http://localhost.example.com/',
    'http://metadata.example.com/',
  ])('%s is public', (url) => {
    expect(isPrivateHost(hostOf(url))).toBe(false);
  });

  it('fails closed on a bracketed host that is not IPv6', () => {
    expect(isPrivateHost('[not-an-address]')).toBe(true);
    expect(isPrivateHost('[1:2:3]')).toBe(true);
    expect(isPrivateHost('[1::2::3]')).toBe(true);
  });

  it('a name that only looks numeric is not an IPv4 address', () => {
    expect(isPrivateHost('10.0.0.1.example.com')).toBe(false);
    expect(isPrivateHost('127.0.0.256')).toBe(false);
  });
});

describe('isPrivateAddress (resolved addresses)', () => {
  it.each(['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.0.1', '0.0.0.0', '::1', '::', '::ffff:127.0.0.1', '::ffff:7f00:1', 'fe80::1', 'fd12:3456::1', 'fe80::1%eth0', '64:ff9b:1::a9fe:a9fe', '::ffff:0:a9fe:a9fe', '2001:0:4136:e378:8000:63bf:5601:5601'])(
    '%s is private',
    (address) => {
      expect(isPrivateAddress(address)).toBe(true);
    },
  );

  it.each(['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});
