import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import { CREDENTIALS_DETAIL, issuedBeforeCutoff } from '../../http/auth.ts';
import { AppError } from '../../http/errors.ts';
import type { PasswordHasher } from '../users/passwords.ts';
import { findUserByEmail, findUserById } from '../users/users.repository.ts';
import type { UsersService } from '../users/users.service.ts';
import { deviceSignedIn, findDevice } from './device-tokens.ts';
import { findLiveRefreshToken, insertRefreshToken, revokeRefreshTokens } from './auth.repository.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { TokenClaims, TokenService } from './token.service.ts';

const invalidCredentials = () =>
  new AppError('INVALID_CREDENTIALS', 'Incorrect email or password', { headers: { 'www-authenticate': 'Bearer' } });
const invalidToken = () => new AppError('INVALID_TOKEN', CREDENTIALS_DETAIL, { headers: { 'www-authenticate': 'Bearer' } });

/** Sign-in, tokens and the signed-in user's password. */
export class AuthService {
  private readonly deps: { db: Db; tokens: TokenService; hasher: PasswordHasher; users: UsersService; throttle: LoginThrottle };

  constructor(deps: AuthService['deps']) {
    this.deps = deps;
  }

  /**
   * Unknown e-mail, no usable password and a wrong password all cost one bcrypt comparison and give the same 401; only the right
   * password learns the account is inactive. Every attempt counts first against the throttle: of the device when `deviceToken` is a
   * live device token of this e-mail's account, else of the e-mail and the client. A success clears it and answers a device token.
   */
  async login(email: string, password: string, client: string, deviceToken?: string) {
    const { db, tokens, hasher, throttle } = this.deps;
    const device = await findDevice(db, deviceToken);
    const holder = device ? await findUserByEmail(db, email) : undefined;
    const onDevice = device !== undefined && holder?.id === device.userId ? device : undefined;
    if (onDevice) await throttle.attemptOnDevice(onDevice.id);
    else await throttle.attempt(email, client);
    const user = onDevice ? holder : await findUserByEmail(db, email);
    const ok = await hasher.verify(password, user?.password_hash);
    if (!user || !ok) throw invalidCredentials();
    if (!user.is_active) throw new AppError('INACTIVE_USER', 'Inactive user');
    if (onDevice) await throttle.clearDevice(onDevice.id);
    else await throttle.clear(email, client);
    // of the generation read with the password: a cut-off committed since refuses them
    const [access, refresh] = await Promise.all([
      tokens.issue(user.id, 'access', user.sessions_generation),
      tokens.issue(user.id, 'refresh', user.sessions_generation),
    ]);
    await insertRefreshToken(db, { jti: refresh.jti, user_id: user.id, expires_at: refresh.expiresAt });
    const device_token = await deviceSignedIn(db, user.id, onDevice);
    return { access_token: access.token, refresh_token: refresh.token, token_type: 'bearer' as const, device_token };
  }

  private async liveRefreshClaims(refreshToken: string): Promise<TokenClaims> {
    const claims = await this.deps.tokens.verify(refreshToken, 'refresh');
    if (!claims) throw invalidToken();
    const row = await findLiveRefreshToken(this.deps.db, claims.jti);
    if (!row || row.user_id !== Number(claims.sub)) throw invalidToken();
    return claims;
  }

  /** A sign-in that checked the password just before a cut-off may store its refresh token after it: its generation refuses it. */
  async refresh(refreshToken: string) {
    const claims = await this.liveRefreshClaims(refreshToken);
    const user = await findUserById(this.deps.db, Number(claims.sub));
    if (!user || issuedBeforeCutoff(claims, user)) throw invalidToken();
    const access = await this.deps.tokens.issue(user.id, 'access', user.sessions_generation);
    return { access_token: access.token, token_type: 'bearer' as const };
  }

  async logout(refreshToken: string): Promise<void> {
    const claims = await this.liveRefreshClaims(refreshToken);
    await revokeRefreshTokens(this.deps.db, Number(claims.sub), claims.jti);
  }

  /** A new password for the signed-in user, who proves the current one; every session ends. */
  async changePassword(user: UserRow, currentPassword: string, newPassword: string): Promise<void> {
    if (!(await this.deps.hasher.verify(currentPassword, user.password_hash))) throw new AppError('INVALID_CREDENTIALS', 'Current password is incorrect');
    await this.deps.users.setPassword(user.id, newPassword);
  }
}
