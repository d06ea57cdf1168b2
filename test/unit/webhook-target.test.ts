import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { UnsafeTargetError, checkWebhookUrl, isBlockedAddress, resolveTarget } from '../../src/watch/webhook-target.js';

test('private, loopback, link-local, reserved and metadata addresses are blocked; public ones are not', () => {
  for (const address of [
    '127.0.0.1',
    '127.255.0.9',
    '10.0.0.1',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'fc00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '::127.0.0.1',
    '::7f00:1',
    '::ffff:0:7f00:1',
    'fec0::1',
    '2002:7f00:1::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '64:ff9b::a00:1',
    '64:ff9b:1::a00:1',
    'not an address',
  ]) {
    assert.equal(isBlockedAddress(address), true, address);
  }
  for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2001:4860:4860::8888', '::ffff:8.8.8.8', '::ffff:808:808']) assert.equal(isBlockedAddress(address), false, address);
});

test('any IPv4 address is judged the same written plain or mapped into IPv6', () => {
  fc.assert(
    fc.property(fc.ipV4(), (v4) => {
      assert.equal(isBlockedAddress(`::ffff:${v4}`), isBlockedAddress(v4));
    }),
  );
});

test('webhook URLs: https only, no credentials or fragment; allowed hosts may be plain http', () => {
  const none = new Set<string>();
  assert.equal(checkWebhookUrl('https://hooks.example.com/upi', none).hostname, 'hooks.example.com');
  for (const bad of ['http://hooks.example.com/', 'ftp://hooks.example.com/', 'https://u:p@hooks.example.com/', 'https://hooks.example.com/#x', 'relative/path', `https://h.example/${'a'.repeat(3000)}`]) {
    assert.throws(() => checkWebhookUrl(bad, none), UnsafeTargetError, bad);
  }
  assert.equal(checkWebhookUrl('http://127.0.0.1:9000/hook', new Set(['127.0.0.1'])).port, '9000');
});

test('a target is resolved and refused when any address it has is unsafe, unless its host is allowed', async () => {
  const none = new Set<string>();
  await assert.rejects(resolveTarget(new URL('https://127.0.0.1/'), none), UnsafeTargetError);
  await assert.rejects(resolveTarget(new URL('https://[::1]/'), none), UnsafeTargetError);
  // localhost resolves (from /etc/hosts) to loopback only.
  await assert.rejects(resolveTarget(new URL('https://localhost/'), none), /resolves to/);
  assert.deepEqual(await resolveTarget(new URL('http://127.0.0.1:9/'), new Set(['127.0.0.1'])), { address: '127.0.0.1', family: 4 });
  assert.deepEqual(await resolveTarget(new URL('https://8.8.8.8/'), none), { address: '8.8.8.8', family: 4 });
  await assert.rejects(resolveTarget(new URL('https://no-such-host.invalid/'), none), /does not resolve/);
});
