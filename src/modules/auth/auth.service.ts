import type { Db } from '../../db/database.ts';
import type { UserRow } from '../../db/schema.ts';
import { CREDENTIALS_DETAIL, issuedBeforeCutoff } from '../../http/auth.ts';
import { AppError } from '../../http/errors.ts';
import type { PasswordHasher } from '../users/passwords.ts';
import type { UsersService } from '../users/users.service.ts';
import { DeviceTokens } from './device-tokens.ts';
import { findLiveRefreshToken, insertRefreshToken, revokeRefreshToken } from './auth.repository.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { TokenClaims, TokenService } from './token.service.ts';

const invalidCredentials = () =>
  new AppError('INVALID_CREDENTIALS', 'Incorrect email or password', { headers: { 'www-authenticate': 'Bearer' } });
const invalidToken = () => new AppError('INVALID_TOKEN', CREDENTIALS_DETAIL, { headers: { 'www-authenticate': 'Bearer' } });

/** Sign-in, tokens and the signed-in user's password. */
export class AuthService {
  private readonly db: Db;
  private readonly tokens: TokenService;
  private readonly hasher: PasswordHasher;
  private readonly users: UsersService;
  private readonly throttle: LoginThrottle;
  private readonly devices: DeviceTokens;

  constructor(deps: { db: Db; tokens: TokenService; hasher: PasswordHasher; users: UsersService; throttle: LoginThrottle }) {
    this.db = deps.db;
    this.devices = new DeviceTokens(deps.db);
    this.tokens = deps.tokens;
    this.hasher = deps.hasher;
    this.users = deps.users;
    this.throttle = deps.throttle;
  }

  /**
   * Unknown e-mail, a user without a usable password and a wrong password all cost one bcrypt
   * comparison and give the same 401; only the holder of the right password learns the account is
   * inactive. Every attempt counts against the sign-in throttle first (429 once it is reached, for
   * known and unknown e-mails alike): of the device when `deviceToken` is a live device token of
   * the account with this e-mail, else of the e-mail and the client; a successful sign-in clears
   * that count and answers a device token (the one presented, renewed, or a new one).
   */
  async login(email: string, password: string, client: string, deviceToken?: string) {
    const device = await this.devices.find(deviceToken);
    const holder = device ? await this.users.findByEmail(email) : undefined;
    const onDevice = device !== undefined && holder?.id === device.userId ? device : undefined;
    if (onDevice) await this.throttle.attemptOnDevice(onDevice.id);
    else await this.throttle.attempt(email, client);
    const user = onDevice ? holder : await this.users.findByEmail(email);
    const ok = await this.hasher.verify(password, user?.password_hash);
    if (!user || !ok) throw invalidCredentials();
    if (!user.is_active) throw new AppError('INACTIVE_USER', 'Inactive user');
    if (onDevice) await this.throttle.clearDevice(onDevice.id);
    else await this.throttle.clear(email, client);
    // of the generation read with the password: a cut-off committed since refuses them
    const [access, refresh] = await Promise.all([
      this.tokens.issue(user.id, 'access', user.sessions_generation),
      this.tokens.issue(user.id, 'refresh', user.sessions_generation),
    ]);
    await insertRefreshToken(this.db, { jti: refresh.jti, user_id: user.id, expires_at: refresh.expiresAt });
    const device_token = await this.devices.signedIn(user.id, onDevice);
    return { access_token: access.token, refresh_token: refresh.token, token_type: 'bearer' as const, device_token };
  }

  private async liveRefreshClaims(refreshToken: string): Promise<TokenClaims> {
    const claims = await this.tokens.verify(refreshToken, 'refresh');
    if (!claims) throw invalidToken();
    const row = await findLiveRefreshToken(this.db, claims.jti);
    if (!row || row.user_id !== Number(claims.sub)) throw invalidToken();
    return claims;
  }

  /**
   * A cut-off revokes every refresh token, but a sign-in that checked the old password just before
   * a cut-off may store its refresh token just after it: its session generation, from before the
   * cut-off, refuses it here. The access token is of the refresh token's generation.
   */
  async refresh(refreshToken: string) {
    const claims = await this.liveRefreshClaims(refreshToken);
    const user = await this.users.findById(Number(claims.sub));
    if (!user || issuedBeforeCutoff(claims, user)) throw invalidToken();
    const access = await this.tokens.issue(user.id, 'access', user.sessions_generation);
    return { access_token: access.token, token_type: 'bearer' as const };
  }

  async logout(refreshToken: string): Promise<void> {
    const claims = await this.liveRefreshClaims(refreshToken);
    await revokeRefreshToken(this.db, claims.jti, Number(claims.sub));
  }

  /** Signs the caller out everywhere: every refresh token revoked, every access token issued until now refused. */
  async logoutAll(user: UserRow): Promise<void> {
    await this.users.endAllSessions(user.id);
  }

  /** A new password for the signed-in user, who proves the current one; every session ends. */
  async changePassword(user: UserRow, currentPassword: string, newPassword: string): Promise<void> {
    if (!(await this.hasher.verify(currentPassword, user.password_hash))) {
      throw new AppError('INVALID_CREDENTIALS', 'Current password is incorrect');
    }
    await this.users.setPassword(user.id, newPassword);
  }
}
