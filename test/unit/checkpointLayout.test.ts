import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accelerateSave, finalWeightFiles, incompleteReason, isExtraMetricsLog, isMetricsLog, orbaxStep, parseCheckpointName, pointerNames, unfinishedMarker } from '../../src/core/discovery/checkpointLayout';

test('checkpoint folders in every supported layout', () => {
  const cases: Array<[string, number, string]> = [
    ['step_10000', 10000, 'step_N'],
    ['step-500', 500, 'step_N'],
    ['step22000', 22000, 'step_N'],
    ['checkpoint-500', 500, 'checkpoint-N'],
    ['checkpoint_1500', 1500, 'checkpoint-N'],
    ['global_step1200', 1200, 'global_stepN'],
    ['global_step_7', 7, 'global_stepN'],
    ['ckpt_300', 300, 'ckpt_N'],
    ['ckpt-0042', 42, 'ckpt_N'],
  ];
  for (const [name, step, layout] of cases) {
    assert.deepEqual(parseCheckpointName(name, true), { kind: 'step', step, layout }, name);
  }
});

test('folders that are not checkpoints', () => {
  for (const name of ['checkpoints', 'logs', 'step', 'steps_100', 'run_500', 'my_step_100', 'step_10000.bak']) {
    assert.equal(parseCheckpointName(name, true), undefined, name);
  }
});

test('a folder name is only a checkpoint as a folder; as a file it needs an extension', () => {
  assert.equal(parseCheckpointName('step_100', false), undefined);
  assert.equal(parseCheckpointName('model_step_500.pt', true), undefined);
});

test('flat checkpoint files take the number after step/iter/it/checkpoint/ckpt', () => {
  const cases: Array<[string, number]> = [
    ['model_step_500.pt', 500],
    ['checkpoint_12000.pth', 12000],
    ['step=300.ckpt', 300],
    ['iter_0001000.pt', 1000],
    ['ckpt-77.safetensors', 77],
    ['model_it5000.bin', 5000],
    ['run3_step_900.pt', 900], // not the 3 of run3
    ['weights_0300.pt', 300], // no keyword: the last number standing alone
  ];
  for (const [name, step] of cases) {
    assert.deepEqual(parseCheckpointName(name, false), { kind: 'step', step, layout: 'flat' }, name);
  }
  // An epoch is not a step: said as an epoch.
  assert.deepEqual(parseCheckpointName('epoch_12.pth', false), { kind: 'epoch', step: null, epoch: 12, layout: 'flat' });
});

test('Lightning checkpoint files', () => {
  assert.deepEqual(parseCheckpointName('epoch=3-step=1200.ckpt', false), { kind: 'step', step: 1200, epoch: 3, layout: 'lightning' });
  assert.deepEqual(parseCheckpointName('epoch=3-step=1200-v1.ckpt', false), { kind: 'step', step: 1200, epoch: 3, layout: 'lightning' });
  // A custom filename with no step: an epoch (not a step), and the decimal loss is no number of it.
  assert.deepEqual(parseCheckpointName('epoch=3-val_loss=0.25.ckpt', false), { kind: 'epoch', step: null, epoch: 3, layout: 'lightning' });
});

test('files without a step number, or companions of a checkpoint, are not checkpoints', () => {
  for (const name of [
    'model.safetensors',
    'checkpoint.pt',
    'resnet50.pt',
    'llama3.pth',
    'optimizer.pt',
    'optimizer_0.pt',
    'rng_state_3.pth',
    'scheduler.pt',
    'training_args.bin',
    'model-00001-of-00004.safetensors',
    'pytorch_model-00002-of-00002.bin',
    'mp_rank_00_model_states.pt',
    'zero_pp_rank_0_mp_rank_00_optim_states.pt',
    'model_step_500.txt',
    'step_500.json',
  ]) {
    assert.equal(parseCheckpointName(name, false), undefined, name);
  }
});

test('steps are numbers, so step_9000 sorts before step_10000', () => {
  const names = ['step_10000', 'step_9000', 'step_22000', 'step_800'];
  const sorted = names.map((n) => ({ n, s: parseCheckpointName(n, true)!.step ?? -1 })).sort((a, b) => a.s - b.s).map((x) => x.n);
  assert.deepEqual(sorted, ['step_800', 'step_9000', 'step_10000', 'step_22000']);
});

test('metrics logs', () => {
  for (const name of ['train.jsonl', 'metrics.jsonl', 'metrics.csv', 'metrics_val.csv', 'progress.csv', 'log.csv', 'log_train.csv', 'trainer_state.json', 'events.out.tfevents.1712345678.host.1234.0']) {
    assert.equal(isMetricsLog(name), true, name);
  }
  for (const name of ['data.csv', 'results.csv', 'config.json', 'train.json', 'events.out', 'README.md', 'training.log', 'history.csv']) {
    assert.equal(isMetricsLog(name, 'run'), false, name);
  }
  for (const name of ['data.csv', 'train.csv', 'predictions.csv', 'config.json', 'events.out', 'README.md', 'train.log']) {
    assert.equal(isMetricsLog(name, 'logs'), false, name);
  }
});

test('other CSVs and Keras training.log are logs inside logs/, and beside a run only (isExtraMetricsLog)', () => {
  for (const name of ['history.csv', 'results.csv', 'training.log', 'keras_log.csv']) assert.equal(isMetricsLog(name, 'logs'), true, name);
  for (const name of ['history.csv', 'results.csv', 'training.log']) assert.equal(isExtraMetricsLog(name), true, name);
  // Dataset names stay data; names isMetricsLog already takes are not "extra".
  for (const name of ['train.csv', 'val.csv', 'test_1.csv', 'predictions.csv', 'metrics.csv', 'progress.csv', 'train.log', 'run.txt']) {
    assert.equal(isExtraMetricsLog(name), false, name);
  }
});

test('a dataset split jsonl is a log only inside logs/', () => {
  assert.equal(isMetricsLog('train.jsonl', 'logs'), true);
  assert.equal(isMetricsLog('train.jsonl', 'run'), false);
  assert.equal(isMetricsLog('val.jsonl', 'run'), false);
  assert.equal(isMetricsLog('metrics.jsonl', 'run'), true);
  assert.equal(isMetricsLog('train_log.jsonl', 'run'), true);
});

test('a folder checkpoint still being written says why; a finished one says nothing', () => {
  const f = (...names: string[]) => names.map((name) => ({ name, bytes: 10 }));
  assert.equal(incompleteReason(f('checkpoint.pt', 'optimizer.pt')), undefined);
  assert.equal(incompleteReason([]), 'holds no files yet');
  assert.equal(incompleteReason(f('checkpoint.pt.tmp')), 'checkpoint.pt.tmp is still being written');
  assert.equal(incompleteReason(f('model.safetensors', 'sub/optimizer.pt.partial')), 'sub/optimizer.pt.partial is still being written');
  // torch.distributed.checkpoint: shards, and .metadata written last (as .metadata.tmp, then renamed).
  assert.equal(incompleteReason(f('__0_0.distcp', '__1_0.distcp', '.metadata')), undefined);
  assert.match(incompleteReason(f('__0_0.distcp', '__1_0.distcp')) ?? '', /without their \.metadata/);
  assert.match(incompleteReason(f('__0_0.distcp', '.metadata.tmp')) ?? '', /\.metadata\.tmp is still being written/);
  // Hugging Face shards: all of them, or which are there.
  assert.equal(incompleteReason(f('model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json')), undefined);
  assert.equal(incompleteReason(f('model-00001-of-00003.safetensors', 'model-00003-of-00003.safetensors')), '2 of 3 shards of model.safetensors are there');
  assert.equal(incompleteReason(f('pytorch_model-00001-of-00002.bin')), '1 of 2 shards of pytorch_model.bin are there');
});

test('Megatron-LM iteration folders and fairseq mid-epoch files, as their savers name them', () => {
  // megatron/training/checkpointing.py get_checkpoint_name: 'iter_{:07d}'.format(iteration)
  assert.deepEqual(parseCheckpointName('iter_0001000', true), { kind: 'step', step: 1000, layout: 'iter_N' });
  assert.deepEqual(parseCheckpointName('iter_0000000', true), { kind: 'step', step: 0, layout: 'iter_N' });
  assert.equal(parseCheckpointName('iter_0001000_tmp', true), undefined, 'a staging folder is no checkpoint');
  // fairseq/checkpoint_utils.py save_checkpoint: checkpoint_{epoch}_{updates}{suffix}.pt
  assert.deepEqual(parseCheckpointName('checkpoint_3_12000.pt', false), { kind: 'step', step: 12000, epoch: 3, layout: 'flat' });
  assert.deepEqual(parseCheckpointName('checkpoint_3_12000-shard0.pt', false), { kind: 'step', step: 12000, epoch: 3, layout: 'flat' });
});

test("Orbax step folders are bare numbers holding Orbax's marker files; a bare number alone is not one", () => {
  assert.deepEqual(orbaxStep('1000', ['_CHECKPOINT_METADATA', 'default']), { kind: 'step', step: 1000, layout: 'orbax' });
  assert.deepEqual(orbaxStep('7', ['commit_success.txt', 'state']), { kind: 'step', step: 7, layout: 'orbax' });
  assert.equal(orbaxStep('0', ['checkpoints', 'logs']), undefined, 'a seed folder');
  assert.equal(orbaxStep('step_5', ['_CHECKPOINT_METADATA']), undefined);
  assert.deepEqual(orbaxStep('300.orbax-checkpoint-tmp-1764590400', ['default']), {
    kind: 'step',
    step: 300,
    layout: 'orbax',
    incomplete: 'Orbax is still writing it (a temporary folder until the save is renamed)',
  });
});

test("fairseq's end-of-epoch checkpoint{E}.pt is an epoch, not a step; its best/last copies are aliases", () => {
  // fairseq/checkpoint_utils.py save_checkpoint: "checkpoint{}{}.pt".format(epoch, suffix), checkpoint_best{suffix}.pt,
  // checkpoint_last{suffix}.pt, checkpoint.best_{metric}_{value:.2f}.pt (copies of the save just written).
  assert.deepEqual(parseCheckpointName('checkpoint3.pt', false), { kind: 'epoch', step: null, epoch: 3, layout: 'flat' });
  assert.deepEqual(parseCheckpointName('checkpoint3-shard0.pt', false), { kind: 'epoch', step: null, epoch: 3, layout: 'flat' });
  assert.deepEqual(parseCheckpointName('checkpoint_best.pt', false), { kind: 'alias', step: null, layout: 'flat', alias: { role: 'best', how: 'unknown' } });
  assert.deepEqual(parseCheckpointName('checkpoint_last.pt', false), { kind: 'alias', step: null, layout: 'flat', alias: { role: 'last', how: 'unknown' } });
  assert.equal(parseCheckpointName('checkpoint.best_loss_2.13.pt', false)?.alias?.role, 'best');
});

test("Lightning's last.ckpt (+ -v1), NeMo's …-last.ckpt with its step, Composer's latest-rank0.pt are aliases", () => {
  assert.deepEqual(parseCheckpointName('last.ckpt', false), { kind: 'alias', step: null, layout: 'flat', alias: { role: 'last', how: 'unknown' } });
  assert.equal(parseCheckpointName('last-v1.ckpt', false)?.alias?.role, 'last');
  assert.deepEqual(parseCheckpointName('megatron_gpt--val_loss=2.10-step=2000-consumed_samples=4000.0-last.ckpt', false)?.alias, { role: 'last', step: 2000, how: 'name' });
  assert.deepEqual(parseCheckpointName('megatron_gpt--val_loss=2.10-step=2000-consumed_samples=4000.0.ckpt', false), { kind: 'step', step: 2000, layout: 'flat' });
  assert.equal(parseCheckpointName('latest-rank0.pt', false)?.alias?.role, 'latest');
  assert.equal(parseCheckpointName('best.keras', false)?.alias?.role, 'best');
  assert.equal(parseCheckpointName('model_best.pth.tar', false)?.alias?.role, 'best');
  assert.equal(parseCheckpointName('checkpoint-best', true)?.alias?.role, 'best');
  // Words that merely contain one are not aliases.
  assert.equal(parseCheckpointName('bestmodel_step_5.pt', false)?.kind, 'step');
});

test('Composer ep{E}-ba{B}-rank{R}.pt: the batch count is the step; final names are final weights; Keras numbers are epochs', () => {
  assert.deepEqual(parseCheckpointName('ep2-ba300-rank0.pt', false), { kind: 'step', step: 300, epoch: 2, layout: 'composer' });
  assert.deepEqual(parseCheckpointName('ep2-ba300', true), { kind: 'step', step: 300, epoch: 2, layout: 'composer' });
  assert.deepEqual(parseCheckpointName('model_final.pth', false), { kind: 'final', step: null, layout: 'flat' });
  assert.deepEqual(parseCheckpointName('final.pt', false), { kind: 'final', step: null, layout: 'flat' });
  assert.deepEqual(parseCheckpointName('model_final_step_100.pt', false), { kind: 'step', step: 100, layout: 'flat' }, 'a step in the name wins');
  // keras/src/callbacks/model_checkpoint.py formats the path with epoch + 1: `model.03-0.50.keras` is epoch 3.
  assert.deepEqual(parseCheckpointName('model.03-0.50.keras', false), { kind: 'epoch', step: null, epoch: 3, layout: 'keras' });
  assert.deepEqual(parseCheckpointName('ckpt_step_40.weights.h5', false), { kind: 'step', step: 40, layout: 'keras' });
  assert.equal(parseCheckpointName('data.h5', false), undefined, 'an HDF5 file is data, not a checkpoint');
});

test("accelerate's checkpoint_N counts saves, and only with its random_states file; otherwise checkpoint_N is a step", () => {
  assert.deepEqual(accelerateSave('checkpoint_2', ['model.safetensors', 'optimizer.bin', 'random_states_0.pkl']), { kind: 'save', step: null, save: 2, layout: 'accelerate' });
  assert.equal(accelerateSave('checkpoint_2', ['model.safetensors']), undefined);
  assert.equal(accelerateSave('checkpoint-2', ['random_states_0.pkl']), undefined, "transformers' checkpoint-N is a step");
});

test('final weights: save_pretrained files and their companions, sharded or not; none without weights', () => {
  assert.deepEqual(finalWeightFiles(['config.json', 'model.safetensors', 'training_args.bin', 'notes.txt']), ['config.json', 'model.safetensors', 'training_args.bin']);
  assert.deepEqual(finalWeightFiles(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json', 'metrics.jsonl']), [
    'model-00001-of-00002.safetensors',
    'model-00002-of-00002.safetensors',
    'model.safetensors.index.json',
  ]);
  assert.deepEqual(finalWeightFiles(['config.json', 'tokenizer.json']), [], 'a config alone is no weights');
  // An index with none of its shards beside it: they are not there yet.
  assert.equal(incompleteReason([{ name: 'model.safetensors.index.json', bytes: 10 }, { name: 'config.json', bytes: 3 }]), 'model.safetensors.index.json names shards, none of them is there');
});

test("NeMo's unfinished marker, DeepSpeed's and Megatron's pointer files", () => {
  // nemo/utils/callbacks/nemo_model_checkpoint.py format_checkpoint_unfinished_marker_path
  assert.equal(unfinishedMarker('gpt--step=10.ckpt'), 'gpt--step=10-unfinished');
  assert.equal(unfinishedMarker('gpt--step=10-EMA.ckpt'), 'gpt--step=10-unfinished');
  assert.equal(unfinishedMarker('gpt--step=10'), 'gpt--step=10-unfinished', 'a distributed checkpoint folder');
  assert.equal(pointerNames('latest', 'global_step500\n')?.('global_step500'), true);
  assert.equal(pointerNames('latest', 'global_step500')?.('global_step50'), false);
  assert.equal(pointerNames('latest_checkpointed_iteration.txt', '1000')?.('iter_0001000'), true);
  assert.equal(pointerNames('latest_checkpointed_iteration.txt', 'garbage'), undefined);
});
