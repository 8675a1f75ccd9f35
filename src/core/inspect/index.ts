/** Looking inside checkpoints without loading them: pure readers (this folder) and the remote read (remoteRead.ts). */
export * from './types';
export { InspectError, isInspectError, type InspectErrorCode } from './errors';
export { Pieces, type Piece } from './pieces';
export { readPickle, type PickleValue } from './pickle';
export { walkTorchPickle, type WalkLimits } from './torchPickle';
export { readSafetensorsHeader, readShardIndex, MAX_SAFETENSORS_HEADER } from './safetensors';
export { findEndRecord, readCentralDirectory, entryDataRange, firstLocalEntry, type ZipEntry, type ZipDirectory } from './zip';
export { readDcpMetadata } from './dcp';
export { inspectFiles, inspectFilesAsync, isInspectable, magicOf, type FileBytes, type InspectOutcome } from './read';
export { groupTensors, totals, stateParts, summaryLine, inspectCompleteness, diffInspections, formatCount, modulePath, type TensorGroup, type Totals, type StateCount, type Completeness, type InspectionDiff, type TensorChange } from './summary';
export { roleOf, fileRole, writerOf, STATE_ROLES, type Writer, type RoleContext, type FileRole } from './roles';
