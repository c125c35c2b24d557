/**
 * Operators' online backup of the embedded DATA_DIR: `tsx packages/platform/src/cli/backup.ts <target>` (in the
 * all-in-one's container: `tsx node_modules/@cards/platform/src/cli/backup.ts <target>`). See docs/deploy.md.
 */
import { runBackupCommand } from './backup-command';
import { runOperatorCommand } from './operator-command';

runOperatorCommand('backup', runBackupCommand);
