// timewheel-client: the client of the timewheeld API and the verifier of its signed callbacks.
// This file only gathers the public names; each concept lives in its own module.

export * from './types';
export * from './errors';
export * from './client';
export * from './receiver';
