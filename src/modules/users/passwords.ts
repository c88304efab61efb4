import bcrypt from 'bcrypt';
import { AppError } from '../../http/errors.ts';

/** bcrypt reads only the first 72 bytes; longer passwords are refused rather than truncated. */
export const MAX_PASSWORD_BYTES = 72;

export function assertPasswordLength(password: string, field = 'password'): void {
  const bytes = Buffer.byteLength(password, 'utf8');
  if (password.length < 8 || bytes > MAX_PASSWORD_BYTES) {
    const msg = bytes > MAX_PASSWORD_BYTES ? 'password must be at most 72 bytes' : 'password must be at least 8 characters';
    throw new AppError('VALIDATION_ERROR', `Validation failed: body.${field}: ${msg}`, {
      errors: [{ loc: ['body', field], msg, type: bytes > MAX_PASSWORD_BYTES ? 'string_too_long' : 'string_too_short' }],
    });
  }
}

/** Hashing and comparing run on libuv's thread pool (bcrypt's async API), never on the event loop. */
export class PasswordHasher {
  private readonly rounds: number;
  /**
   * A hash of the configured cost matching no password: bcrypt's cost is in the salt, so comparing
   * takes as long as a real one, and making it costs no hashing at start-up.
   */
  private readonly dummy: string;

  constructor(rounds: number) {
    this.rounds = rounds;
    this.dummy = `${bcrypt.genSaltSync(rounds)}${'.'.repeat(31)}`;
  }

  hash(password: string): Promise<string> {
    return bcrypt.hash(password, this.rounds);
  }

  /** Compares against `hash`, or the dummy when there is none, so unknown e-mails take as long as wrong passwords. */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    const tooLong = Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES;
    if (!hash || tooLong) {
      await bcrypt.compare(password, this.dummy);
      return false;
    }
    return bcrypt.compare(password, hash);
  }
}
