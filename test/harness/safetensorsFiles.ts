/**
 * safetensors files built in a test, for sizes not worth committing: a valid file of `n` one-element float32 tensors
 * named like a model's, laid out as safetensors' own writer lays them (tensors back to back from data offset 0, the
 * header padded with spaces to 8 bytes: safetensors/src/tensor.rs `prepare`).
 */
export function manyTensorsSafetensors(n: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"model.layers.${i}.w":{"dtype":"F32","shape":[1],"data_offsets":[${i * 4},${i * 4 + 4}]}`);
  let text = `{"__metadata__":{"format":"pt"},${parts.join(',')}}`;
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const b = Buffer.alloc(8 + text.length + n * 4);
  b.writeBigUInt64LE(BigInt(text.length));
  b.write(text, 8, 'latin1');
  return b;
}
