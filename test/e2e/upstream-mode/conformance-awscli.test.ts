// test/e2e/conformance-awscli.test.ts once more, with the gateway's object bytes on a moto S3 server
// (startServer reads S3EDGE_TEST_UPSTREAM when the imported file starts its gateway).
process.env.S3EDGE_TEST_UPSTREAM = '1';
await import('../conformance-awscli.test.js');

export {};
