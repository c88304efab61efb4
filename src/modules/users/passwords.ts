import bcrypt from 'bcrypt';
import { AppError } from '../../http/errors.ts';

/** bcrypt reads only the first 72 bytes; longer passwords are refused rather than truncated. */
export const MAX_PASSWORD_BYTES = 72;

/** The 422 of a body field that passed its schema but not a rule of the service. */
export const invalidBodyField = (field: string, msg: string, type: string) =>
  new AppError('VALIDATION_ERROR', `Validation failed: body.${field}: ${msg}`, { errors: [{ loc: ['body', field], msg, type }] });

export function assertPasswordLength(password: string, field = 'password'): void {
  const tooLong = Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES;
  if (tooLong) throw invalidBodyField(field, 'password must be at most 72 bytes', 'string_too_long');
  if (password.length < 8) throw invalidBodyField(field, 'password must be at least 8 characters', 'string_too_short');
}

/** Hashing and comparing run on libuv's thread pool (bcrypt's async API), never on the event loop. */
export class PasswordHasher {
  private readonly rounds: number;
  /** A hash matching no password, made without hashing: its salt has the configured cost, so comparing takes as long as with a real one. */
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
