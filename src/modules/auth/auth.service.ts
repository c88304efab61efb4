import type { Db } from '../../db/database.ts';
import { AppError } from '../../http/errors.ts';
import { CREDENTIALS_DETAIL } from '../../http/auth.ts';
import { findUserByEmail } from '../users/users.repository.ts';
import type { PasswordHasher } from './passwords.ts';
import { findLiveRefreshToken, insertRefreshToken, revokeRefreshToken } from './refresh-tokens.repository.ts';
import type { TokenClaims, TokenService } from './token.service.ts';

const invalidCredentials = () =>
  new AppError('INVALID_CREDENTIALS', 'Incorrect email or password', { headers: { 'www-authenticate': 'Bearer' } });
const invalidToken = () => new AppError('INVALID_TOKEN', CREDENTIALS_DETAIL, { headers: { 'www-authenticate': 'Bearer' } });

export class AuthService {
  private readonly db: Db;
  private readonly tokens: TokenService;
  private readonly hasher: PasswordHasher;

  constructor(deps: { db: Db; tokens: TokenService; hasher: PasswordHasher }) {
    this.db = deps.db;
    this.tokens = deps.tokens;
    this.hasher = deps.hasher;
  }

  /**
   * Unknown e-mail, a user without a usable password and a wrong password all cost one bcrypt
   * comparison and give the same 401; only the holder of the right password learns the account is
   * inactive.
   */
  async login(email: string, password: string) {
    const user = await findUserByEmail(this.db, email);
    const ok = await this.hasher.verify(password, user?.password_hash);
    if (!user || !ok) throw invalidCredentials();
    if (!user.is_active) throw new AppError('INACTIVE_USER', 'Inactive user');
    const [access, refresh] = await Promise.all([this.tokens.issue(user.id, 'access'), this.tokens.issue(user.id, 'refresh')]);
    await insertRefreshToken(this.db, { jti: refresh.jti, user_id: user.id, expires_at: refresh.expiresAt });
    return { access_token: access.token, refresh_token: refresh.token, token_type: 'bearer' as const };
  }

  private async liveRefreshClaims(refreshToken: string): Promise<TokenClaims> {
    const claims = await this.tokens.verify(refreshToken, 'refresh');
    if (!claims) throw invalidToken();
    const row = await findLiveRefreshToken(this.db, claims.jti);
    if (!row || row.user_id !== Number(claims.sub) || !row.is_active) throw invalidToken();
    return claims;
  }

  async refresh(refreshToken: string) {
    const claims = await this.liveRefreshClaims(refreshToken);
    const access = await this.tokens.issue(Number(claims.sub), 'access');
    return { access_token: access.token, token_type: 'bearer' as const };
  }

  async logout(refreshToken: string): Promise<void> {
    const claims = await this.liveRefreshClaims(refreshToken);
    await revokeRefreshToken(this.db, claims.jti, Number(claims.sub));
  }
}
